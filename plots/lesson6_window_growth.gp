reset
# lesson6_window_growth.gp — KV cache bytes as a generation goes on: the full cache
# grows by the same bytes every token; a sliding window stops growing at W tokens.
# Reads window.csv written by `kvscope budget --window W` (columns position,
# kv_bytes_full, kv_bytes_window, max_abs_dlogit). Writes out.png (1600x900) and out.svg.
# By hand, from the repository root:
#   gnuplot -e "in='data/lesson6/long/window.csv'; W=128; S=4; out='/tmp/growth'" plots/lesson6_window_growth.gp
if (!exists("in")) in = 'data/lesson6/long/window.csv'
if (!exists("W")) W = 128
if (!exists("S")) S = 4
if (!exists("out")) out = 'plots/lesson6/window_growth'
load 'plots/style.gp'
evaluate need_columns(in, 'position kv_bytes_full kv_bytes_window max_abs_dlogit')
set datafile separator ','

set title sprintf('KV cache memory: the full cache grows, a window of %d tokens (%d sinks) plateaus', W, S)
set xlabel 'tokens in the sequence'
set ylabel 'KV cache (MiB)'
set y2label 'max |Δlogit| of the window vs the full cache'
set ytics nomirror
set y2tics nomirror out
set yrange [0:*]
set y2range [0:*]
set key top left

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    plot in using ($2 + 1):($4 / 1048576.0) with lines ls 2 title 'full cache', \
         in using ($2 + 1):($6 / 1048576.0) with lines ls 1 title sprintf('window W = %d, sink S = %d', W, S), \
         in using ($2 + 1):7 axes x1y2 with lines lc rgb '#999999' lw 1.5 dt 1 title '|Δlogit| (right axis)'
    set output
}
