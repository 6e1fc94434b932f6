reset
# lesson6_window_growth.gp — a sliding window over the KV cache, two panels on one x axis:
# top, the cache's bytes as the sequence grows (the full cache grows by the same bytes
# every token; the window stops at W tokens); bottom, how far the window's logits are
# from the full cache's, step by step, with S attention sinks kept and, when nosink is
# given, with none (the same budget of W tokens: W recent ones instead of S + W − S).
# Reads window.csv written by `kvscope budget --window W --sink S` (columns position,
# kv_bytes_full, kv_bytes_window, max_abs_dlogit); nosink: the same with --sink 0.
# By hand, from the repository root:
#   gnuplot -e "in='data/lesson6/long/window.csv'; nosink='data/lesson6/nosink/window.csv'; W=128; S=4; out='/tmp/growth'" plots/lesson6_window_growth.gp
load 'plots/style.gp'
evaluate need_vars('in W S out')
evaluate need_columns(in, 'position kv_bytes_full kv_bytes_window max_abs_dlogit')
if (exists('nosink')) { evaluate need_columns(nosink, 'position max_abs_dlogit') }
MiB = 1048576.0
stats in using 'position' nooutput
xmax = STATS_max + 1

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set multiplot title sprintf('A sliding window of W = %d tokens: memory stops growing, the logits move', W) font ',24'
    set xrange [0 : xmax]
    set lmargin 12
    set rmargin 4
    set size 1, 0.5
    set origin 0, 0.43
    set bmargin 0.5
    set format x ''
    unset xlabel
    set ylabel 'KV cache (MiB)'
    set yrange [0 : *]
    set key top left Left reverse
    plot in using ($2 + 1):(column('kv_bytes_full') / MiB) with lines ls 2 title 'full cache', \
         in using ($2 + 1):(column('kv_bytes_window') / MiB) with lines ls 1 title sprintf('window: W = %d tokens (%d sinks + %d recent)', W, S, W - S)
    set size 1, 0.43
    set origin 0, 0
    set tmargin 0.5
    set bmargin 3.5
    set format x '%g'
    set xlabel 'tokens in the sequence'
    set ylabel 'max |Δlogit| vs full'
    set key top left Left reverse
    if (exists('nosink')) {
        plot nosink using ($2 + 1):'max_abs_dlogit' with lines lc rgb '#D55E00' lw 1.5 title sprintf('no sinks: the %d most recent tokens', W), \
             in using ($2 + 1):'max_abs_dlogit' with lines lc rgb '#0072B2' lw 1.5 title sprintf('%d sinks + the %d most recent', S, W - S)
    } else {
        plot in using ($2 + 1):'max_abs_dlogit' with lines lc rgb '#0072B2' lw 1.5 title sprintf('%d sinks + the %d most recent', S, W - S)
    }
    unset multiplot
    set output
}
evaluate publish(out)
