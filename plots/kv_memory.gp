reset
# kv_memory.gp — KV-cache memory while a sequence is generated: the bytes of K and V
# held (used) and allocated (reserved: the cache grows by doubling), against the
# formula, tokens × the bytes one token takes (2 · L · row bytes, written by kvscope as
# kv_bytes_per_token: the script computes no size itself), as a line. With rss set, it also
# draws how much the process's resident memory grew since the prefill (measured:
# differs run to run; weights and activations are in the RSS too).
# Reads kv_memory.csv from `kvscope run` (columns tokens, kv_bytes, kv_reserved_bytes,
# kv_bytes_per_token)
# and, for rss, its timing.csv (columns step, rss_bytes).
# By hand:
#     gnuplot -e "in='data/run/kv_memory.csv'; out='plots/kv_memory'" plots/kv_memory.gp
#     gnuplot -e "in='data/run/kv_memory.csv'; rss='data/run/timing.csv'; out='plots/kv_memory_measured'" plots/kv_memory.gp
load 'plots/style.gp'
evaluate need_vars('in out')
evaluate need_columns(in, 'step tokens kv_bytes kv_reserved_bytes kv_bytes_per_token')
if (exists('rss')) { evaluate need_columns(rss, 'step rss_bytes') }

MiB = 1024.0 ** 2
stats in using 'kv_bytes_per_token' nooutput
per = STATS_max   # the same on every row
formula(T) = per * T
stats in using 'tokens' nooutput
Tmin = STATS_min
Tmax = STATS_max
P = Tmin          # the prompt: tokens after the prefill (step 0)
if (exists('rss')) {
    stats rss every ::0::0 using 'rss_bytes' nooutput
    rss0 = STATS_max
}

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    if (exists('rss')) {
        set title sprintf("Process memory (RSS, measured) next to the KV cache (%d B per token)", per)
    } else {
        set title sprintf("KV-cache memory while generating  (%d B per token)", per)
    }
    set xlabel 'tokens in the cache (prompt + generated)'
    set ylabel 'memory (MiB)'
    set xrange [0 : Tmax * 1.02]
    set yrange [0 : *]
    set key top left Left reverse
    set offsets 0, 0, graph 0.6, 0   # room above the lines for the key
    set samples 2
    if (exists('rss')) {
        plot in using 'tokens':(column('kv_reserved_bytes') / MiB) with steps ls 4 title 'KV reserved (allocated, grows by doubling)', \
             rss using (P + column('step')):((column('rss_bytes') - rss0) / MiB) with lines ls 5 title 'process RSS growth since the prefill (measured)', \
             in using 'tokens':(column('kv_bytes') / MiB) with lines ls 1 lw 6 title 'KV used (counted by the cache)', \
             [P:Tmax] formula(x) / MiB with lines ls 7 lw 2 dt (8,8) title sprintf('formula: 2·L·(row bytes) = %d B per token', per)
    } else {
        plot in using 'tokens':(column('kv_reserved_bytes') / MiB) with steps ls 4 title 'KV reserved (allocated, grows by doubling)', \
             in using 'tokens':(column('kv_bytes') / MiB) with lines ls 1 lw 6 title 'KV used (counted by the cache)', \
             [P:Tmax] formula(x) / MiB with lines ls 7 lw 2 dt (8,8) title sprintf('formula: 2·L·(row bytes) = %d B per token', per)
    }
    set output
}
evaluate publish(out)
