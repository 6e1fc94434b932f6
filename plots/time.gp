reset
# time.gp — measured time of one decode step with the KV cache and without it
# (recomputing all T tokens): the median of the timed runs, with bars from the
# fastest to the slowest run, on log-log axes; the speed-up at the largest T is
# written on the chart. Measured, not computed: it differs from run to run and
# from machine to machine.
# Reads timing.csv from `kvscope compare` (columns T, cache_median_s, cache_min_s,
# cache_max_s, recompute_median_s, recompute_min_s, recompute_max_s).
# By hand:
#     gnuplot -e "in='data/compare/timing.csv'; out='plots/compare_time_measured'" plots/time.gp
# Optional: model='...' (what was measured) and machine='...' (on what): two small notes
# under the plot, not in the title.
load (exists('scripts') ? scripts : 'plots').'/style.gp'  # scripts: this folder, set by kvscope
evaluate need_vars('in out')
evaluate need_columns(in, 'T cache_median_s cache_min_s cache_max_s recompute_median_s recompute_min_s recompute_max_s')

stats in using 'T' nooutput
Tmin = STATS_min
Tmax = STATS_max
nrows = STATS_records
# the values of the last row (the largest T)
stats in every ::(nrows - 1)::(nrows - 1) using 'cache_median_s' nooutput
tc = STATS_max
stats in every ::(nrows - 1)::(nrows - 1) using 'recompute_median_s' nooutput
tr = STATS_max
stats in using (1e3 * column('cache_min_s')):(1e3 * column('recompute_max_s')) nooutput
ylo = STATS_min_x
yhi = STATS_max_y

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set title 'Measured time of one decode step, with and without the KV cache'
    # what was measured and on what: a small note under the plot, not in the title
    if (exists('model')) { set label 91 model at screen 0.99, screen (exists('machine') ? 0.07 : 0.025) right noenhanced font ',23' textcolor rgb '#666666'; set bmargin 5 }
    if (exists('machine')) { set label 90 'measured on: '.machine at screen 0.99, screen 0.025 right noenhanced font ',23' textcolor rgb '#666666'; set bmargin (exists('model') ? 7 : 5) }
    set logscale xy
    set xtics ()
    do for [i = 0 : nrows - 1] {
        stats in every ::i::i using 'T' nooutput
        set xtics add (sprintf('%d', STATS_max) STATS_max)
    }
    set mxtics 1
    set xrange [Tmin / 1.4 : Tmax * 1.4]
    set yrange [ylo / 3 : yhi * 20]
    set format x '%g'
    set format y '%g'
    set xlabel 'sequence length T (tokens)'
    set ylabel 'time per step (ms, median; bars: min–max)'
    set key top left Left reverse
    set arrow 1 from Tmax * 1.15, 1e3 * tc to Tmax * 1.15, 1e3 * tr heads size screen 0.008,25 linecolor rgb '#333333' linewidth 2
    set label 1 sprintf("%.0f× faster\nwith the cache\nat T = %d", tr / tc, Tmax) at Tmax / 1.12, 1e3 * sqrt(tc * tr) right font ',24' textcolor rgb '#333333'
    plot in using 'T':(1e3 * column('recompute_median_s')) with lines ls 2 notitle, \
         in using 'T':(1e3 * column('recompute_median_s')):(1e3 * column('recompute_min_s')):(1e3 * column('recompute_max_s')) \
            with yerrorbars ls 2 title 'without cache (recompute T tokens)', \
         in using 'T':(1e3 * column('cache_median_s')) with lines ls 1 notitle, \
         in using 'T':(1e3 * column('cache_median_s')):(1e3 * column('cache_min_s')):(1e3 * column('cache_max_s')) \
            with yerrorbars ls 1 title 'with KV cache (1 new token)'
    set output
}
evaluate publish(out)
