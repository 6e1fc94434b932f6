reset
# lesson6_bytes_error.gp — the price of a smaller KV cache: bytes per token (x) against
# the largest logit error versus the fp32 cache (y, log scale), one point per storage
# type, for a short and a long generation. fp32 is the reference (error 0) and sits
# off the log scale: it is named in the title.
# Reads two dtypes.csv files written by `kvscope budget` (columns dtype, bytes_per_token,
# max_abs_dlogit, ...): short and long. Writes out.png (1600x900) and out.svg.
# By hand, from the repository root:
#   gnuplot -e "short='data/lesson6/short/dtypes.csv'; long='data/lesson6/long/dtypes.csv'; out='/tmp/bytes_error'" plots/lesson6_bytes_error.gp
if (!exists("short")) short = 'data/lesson6/short/dtypes.csv'
if (!exists("long")) long = 'data/lesson6/long/dtypes.csv'
if (!exists("nshort")) nshort = 'short'
if (!exists("nlong")) nlong = 'long'
if (!exists("out")) out = 'plots/lesson6/bytes_vs_error'
load 'plots/style.gp'
evaluate need_columns(short, 'dtype bytes_per_token max_abs_dlogit')
evaluate need_columns(long, 'dtype bytes_per_token max_abs_dlogit')
set datafile separator ','

fp32 = system(sprintf("awk -F, '$1 == \"fp32\" { print $3 }' '%s'", short))
set title sprintf('Smaller KV cache, larger logit error (fp32: %s bytes per token, error 0)', fp32)
set xlabel 'KV cache bytes per token (K and V, all layers)'
set ylabel '|Δlogit| against the fp32 cache'
set logscale y
set format y '10^{%L}'
# ranges follow the model: the types store 1/2 (fp16, bf16) to about 1/4 (int8, q8_0) of fp32
set xrange [0.15 * real(fp32):0.6 * real(fp32)]
set yrange [*:*]
set key top right
# int8 and q8_0 take the same bytes: their labels go left and right of the points
off(s) = s eq 'int8' ? -0.015 * real(fp32) : s eq 'q8_0' ? 0.015 * real(fp32) : 0
lab(s) = s eq "q8_0" ? "q8\\\\_0" : s   # a literal underscore in enhanced text
nofp32(c) = strcol(1) eq 'fp32' ? 1/0 : column(c)

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    plot short using (nofp32(3)):(nofp32(5)) with points ls 7 pointtype 6 pointsize 3 title sprintf('max, %s', nshort), \
         long using (nofp32(3)):(nofp32(5)) with points ls 4 pointtype 2 pointsize 3 title sprintf('max, %s', nlong), \
         short using (nofp32(3)):(nofp32(6)) with points ls 1 title sprintf('mean, %s', nshort), \
         long using (nofp32(3)):(nofp32(6)) with points ls 2 title sprintf('mean, %s', nlong), \
         short using (nofp32(3) + off(strcol(1))):(nofp32(5) * 1.6):(lab(strcol(1))) with labels \
             font ',20' notitle
    set output
}
