reset
# lesson7_memory.gp — KV-cache bytes reserved by three strategies vs bytes actually
# holding tokens, per step, for one batch of sequences of different lengths that
# finish at different steps: preallocate the context per sequence, grow each
# sequence's buffer by doubling (kvcache.c), paged blocks (paged.c). Log y axis:
# preallocation is far above the others.
# Reads memory.csv from `kvscope batch --paged` (columns step, live, bytes_used,
# bytes_prealloc, bytes_doubling, bytes_paged) and takes the three used/reserved
# percentages as variables pre, dbl, pag (summary.csv: used_pct_*) and bs (block size).
# By hand, from the repository root:
#   gnuplot -e "in='data/lesson7/paged/memory.csv'; out='/tmp/memory'; pre='5.2'; dbl='65.7'; pag='88.0'; bs='16'" plots/lesson7_memory.gp
load 'plots/style.gp'
evaluate need_vars('in out pre dbl pag bs')
evaluate need_columns(in, 'step live bytes_used bytes_prealloc bytes_doubling bytes_paged')
KiB = 1024.0

stats in using 'bytes_prealloc' nooutput
ymax = STATS_max / KiB
stats in using 'bytes_used' nooutput
ymin = STATS_min / KiB

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set title 'KV memory of one batch: reserved by three strategies vs holding tokens'
    set xlabel 'decode step (0 = after the prefills)'
    set ylabel 'KV-cache bytes (KiB, log scale)'
    set logscale y
    set format y '%g'
    set xrange [0:*]
    set yrange [ymin / 2 : ymax * 30]
    set key top right Left reverse
    plot in using 'step':(column('bytes_prealloc') / KiB) with steps ls 2 \
            title sprintf('preallocate the context: %s %% of it holds tokens', pre), \
         in using 'step':(column('bytes_doubling') / KiB) with steps ls 5 \
            title sprintf('grow by doubling: %s %%', dbl), \
         in using 'step':(column('bytes_paged') / KiB) with steps ls 1 \
            title sprintf('paged, blocks of %s tokens: %s %%', bs, pag), \
         in using 'step':(column('bytes_used') / KiB) with steps ls 7 dashtype 2 \
            title 'bytes holding tokens'
    set output
}
