reset
# lesson6_bytes_error.gp — the price of a smaller KV cache, one storage type per column:
# left, the bytes each type stores per token (K and V, all layers); right, the largest
# and the mean |Δlogit| against the fp32 cache (log scale) for a short and a long
# generation. fp32 is the reference: its error is 0, written under its column.
# Reads two dtypes.csv files written by `kvscope budget` (columns dtype, bytes_per_token,
# max_abs_dlogit, mean_abs_dlogit): short and long (nshort, nlong: their names).
# By hand, from the repository root:
#   gnuplot -e "short='data/lesson6/short/dtypes.csv'; long='data/lesson6/long/dtypes.csv'; nshort='32 steps'; nlong='480 steps'; out='/tmp/bytes_error'" plots/lesson6_bytes_error.gp
load 'plots/style.gp'
evaluate need_vars('short long out')
if (!exists("nshort")) nshort = 'short'
if (!exists("nlong")) nlong = 'long'
evaluate need_columns(short, 'dtype bytes_per_token max_abs_dlogit mean_abs_dlogit')
evaluate need_columns(long, 'dtype bytes_per_token max_abs_dlogit mean_abs_dlogit')
stats short using 'bytes_per_token' nooutput
n = STATS_records
bmax = STATS_max
stats short using (column('max_abs_dlogit') > 0 ? column('mean_abs_dlogit') : NaN) nooutput
emin = STATS_min
stats long using (column('max_abs_dlogit') > 0 ? column('mean_abs_dlogit') : NaN) nooutput
emin = STATS_min < emin ? STATS_min : emin
lab(s) = s eq 'q8_0' ? 'q8\_0' : s
nz(v) = v > 0 ? v : NaN

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set multiplot layout 1,2 title 'Smaller KV cache, larger logit error: every storage type against the fp32 cache' font ',24'
    set xrange [-0.6 : n - 0.4]
    set xtics scale 0
    set grid noxtics ytics
    set style fill solid 0.85 border rgb '#444444'
    set boxwidth 0.6
    unset key
    set title 'bytes per token (K and V, all layers)'
    set ylabel 'bytes per token'
    set yrange [0 : bmax * 1.18]
    unset logscale y
    set format y '%g'
    plot short using 0:'bytes_per_token':xticlabels(lab(strcol('dtype'))) with boxes lc rgb '#0072B2' notitle, \
         short using 0:'bytes_per_token':(sprintf('%d', column('bytes_per_token'))) with labels offset 0,0.9 font ',23' notitle
    set title 'error against fp32 (log scale)'
    set ylabel 'max |Δlogit| and mean |Δlogit|'
    set logscale y
    set format y '10^{/*1.1 %L}'
    set yrange [emin / 8 : 300]
    set key top left Left reverse font ',23' spacing 1.1
    set label 1 "fp32: error 0 (the reference)" at -0.4, emin / 3 left font ',23' textcolor rgb '#333333'
    plot short using ($0 - 0.27):(nz(column('max_abs_dlogit'))):xticlabels(lab(strcol('dtype'))) with points ls 2 pointsize 2 title sprintf('max, %s', nshort), \
         long using ($0 - 0.09):(nz(column('max_abs_dlogit'))) with points ls 2 pointtype 4 pointsize 2 title sprintf('max, %s', nlong), \
         short using ($0 + 0.09):(nz(column('mean_abs_dlogit'))) with points ls 1 pointsize 2 title sprintf('mean, %s', nshort), \
         long using ($0 + 0.27):(nz(column('mean_abs_dlogit'))) with points ls 1 pointtype 6 pointsize 2 title sprintf('mean, %s', nlong)
    unset label 1
    unset multiplot
    set output
}
evaluate publish(out)
