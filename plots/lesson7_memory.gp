reset
# lesson7_memory.gp — KV-cache bytes reserved by three strategies vs bytes actually
# holding tokens, for one batch of sequences of different lengths that finish at
# different steps: preallocate the context per sequence, grow each sequence's buffer by
# doubling (kvcache.c), paged blocks (paged.c). Left: per step, on a linear scale (the
# preallocation, far above, is written as a number); right: the share of the reserved
# bytes that hold tokens, over all steps, one bar per strategy.
# Reads memory.csv from `kvscope batch --paged` (columns step, live, bytes_used,
# bytes_prealloc, bytes_doubling, bytes_paged) and takes the three used/reserved
# percentages as variables pre, dbl, pag (summary.csv: used_pct_*) and bs (block size).
# By hand, from the repository root:
#   gnuplot -e "in='data/lesson7/paged/memory.csv'; out='/tmp/memory'; pre='5.7'; dbl='73.9'; pag='88.6'; bs='16'" plots/lesson7_memory.gp
load 'plots/style.gp'
evaluate need_vars('in out pre dbl pag bs')
evaluate need_columns(in, 'step live bytes_used bytes_prealloc bytes_doubling bytes_paged')
KiB = 1024.0
stats in using (column('bytes_doubling') / KiB) nooutput
ymax = STATS_max
stats in using (column('bytes_paged') / KiB) nooutput
paged_max = STATS_max
ymax = STATS_max > ymax ? STATS_max : ymax
stats in using (column('bytes_prealloc') / KiB) nooutput
pmax = STATS_max
stats in using 'step' nooutput
smax = STATS_max
pv(i) = i == 0 ? real(pre) : i == 1 ? real(dbl) : real(pag)
$pct << EOD
0
1
2
EOD

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set multiplot title 'KV memory of one batch: what three ways of reserving it take, and how much holds tokens' font ',24'
    set origin 0, 0
    set size 0.66, 0.94
    set title 'reserved bytes per step (linear scale)'
    set xlabel 'decode step (0 = after the prefills)'
    set ylabel 'KV-cache bytes (KiB)'
    set xrange [0 : smax]
    set yrange [0 : ymax * 1.45]
    set format y '%.0f'
    set key top right Left reverse font ',23'
    set label 1 sprintf("preallocating the context takes %.1f MiB at step 0:\nfar above this scale, %.1f× the paged cache's peak", pmax / 1024, pmax / (paged_max > 0 ? paged_max : 1)) \
        at graph 0.03, graph 0.1 left font ',23' textcolor rgb '#D55E00'
    plot in using 'step':(column('bytes_doubling') / KiB) with steps ls 5 title 'grow by doubling', \
         in using 'step':(column('bytes_paged') / KiB) with steps ls 1 title sprintf('paged, blocks of %s tokens', bs), \
         in using 'step':(column('bytes_used') / KiB) with steps ls 7 dashtype 2 title 'bytes holding tokens'
    unset label 1
    set origin 0.66, 0
    set size 0.34, 0.94
    set title 'share holding tokens'
    unset xlabel
    set bmargin 5   # the two-line tic label "pre-\nallocate"
    set ylabel 'bytes holding tokens / bytes reserved (%)'
    set xrange [-0.6 : 2.6]
    set yrange [0 : 109]
    set format y '%g'
    set xtics ("pre-\nallocate" 0, 'doubling' 1, 'paged' 2) scale 0 font ',23'
    set grid noxtics ytics
    set style fill solid 0.85 border rgb '#444444'
    set boxwidth 0.6
    unset key
    plot $pct using 1:(pv($1)):($1 == 0 ? 13983232 : $1 == 1 ? 13400487 : 29362) with boxes lc rgb variable, \
         $pct using 1:(pv($1)):(sprintf('%.1f %%', pv($1))) with labels offset 0,1 font ',23'
    unset multiplot
    set output
}
evaluate publish(out)
