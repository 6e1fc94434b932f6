reset
# prefill_decode.gp — the source article's comparison table as a grouped bar chart:
# the prefill of the prompt next to one decode step with the KV cache, from a real
# run: rows of Q, rows of the cached K, attention scores computed (causal, all heads,
# per layer), FLOPs of the whole step, KV-cache bytes after the step. Log scale: the
# quantities span nine orders of magnitude.
# Reads prefill_decode.csv from `kvscope compare` (columns quantity, label, prefill,
# decode; the first row, quantity "tokens", gives the two lengths T).
# By hand:
#     gnuplot -e "in='data/compare/prefill_decode.csv'; out='plots/prefill_decode'" plots/prefill_decode.gp
load (exists('scripts') ? scripts : 'plots').'/style.gp'  # scripts: this folder, set by kvscope
evaluate need_vars('in out')
evaluate need_columns(in, 'quantity label prefill decode')

stats in every ::0::0 using 'prefill' nooutput
Tp = STATS_max
stats in every ::0::0 using 'decode' nooutput
Td = STATS_max
stats in every ::1 using 'prefill' nooutput
ymax = STATS_max
stats in every ::1 using 'decode' nooutput
ymax = STATS_max > ymax ? STATS_max : ymax

# 57250392 → "57.3 M", KV bytes in binary units (24576 → "24 KiB"), small counts as they are
short(v) = v < 10000 ? sprintf('%d', v) : v < 1e6 ? sprintf('%.3g k', v / 1e3) : v < 1e9 ? sprintf('%.3g M', v / 1e6) : sprintf('%.3g G', v / 1e9)
bin(v) = v < 1024 ? sprintf('%d B', v) : v < 1048576 ? sprintf('%.3g KiB', v / 1024.0) : sprintf('%.3g MiB', v / 1048576.0)
label(v, q) = q eq 'kv_bytes' ? bin(v) : short(v)

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set title sprintf("Prefill (T = %d) and one decode step with the KV cache (T = %d)", Tp, Td)
    set style data histograms
    set style histogram clustered gap 1
    set style fill solid 0.85 border rgb '#444444'
    set boxwidth 1
    set logscale y
    set xrange [-0.55 : 4.55]
    set yrange [0.5 : ymax * 40]
    set format y '10^{/*1.1 %T}'
    set ylabel 'count (log scale)'
    set xtics scale 0 font ',23'
    set grid noxtics nomxtics
    set key top left Left reverse
    plot in every ::1 using 'prefill':xtic(2) ls 4 fillcolor rgb '#E69F00' title sprintf('prefill: %d prompt tokens at once', Tp), \
         '' every ::1 using 'decode' ls 1 fillcolor rgb '#0072B2' title sprintf('decode: 1 new token, %d cached', Td), \
         '' every ::1 using ($0 - 1.0 / 6):(column('prefill')):(label(column('prefill'), strcol('quantity'))) with labels offset 0,1 font ',23' notitle, \
         '' every ::1 using ($0 + 1.0 / 6):(column('decode')):(label(column('decode'), strcol('quantity'))) with labels offset 0,1 font ',23' notitle
    set output
}
evaluate publish(out)
