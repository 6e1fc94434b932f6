reset
# lesson7_blocks.gp — the paged cache's block pool at one decode step: one bar per
# block (block id on x), coloured by the sequence that owns it, as tall as the share
# of its slots that hold tokens; the label is the block's place in its owner's block
# table ("p1·2" = prompt 1's third block). Free blocks are empty outlines.
# Reads blocks.csv from `kvscope batch --paged` (columns block, seq, logical, tokens);
# variables bs (block size), n (sequences), step (the step shown).
# By hand, from the repository root:
#   gnuplot -e "in='data/lesson7/paged/blocks.csv'; bs=16; n=4; step=20; out='/tmp/blocks'" plots/lesson7_blocks.gp
load 'plots/style.gp'
evaluate need_vars('in bs n step out')
evaluate need_columns(in, 'block seq logical tokens')
stats in using 'block' nooutput
nb = STATS_max + 1
array held[n]
do for [b=0:n-1] {
    stats in using (column('seq') == b ? 1 : 0) nooutput
    held[b + 1] = STATS_sum
}
array col[7] = ['#E69F00', '#56B4E9', '#009E73', '#F0E442', '#0072B2', '#D55E00', '#CC79A7']

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set title sprintf('Paged KV cache at decode step %d: %d blocks of %d tokens', step, nb, bs)
    set xlabel 'block id in the pool'
    set ylabel 'share of the block holding tokens'
    set xrange [-0.6:nb - 0.4]
    set yrange [0:1.5]
    set xtics 1 out nomirror
    set ytics 0, 0.25, 1
    set format y '%g'
    set grid noxtics
    set boxwidth 0.85
    set style fill solid 1.0 border linecolor rgb '#555555'
    set key top left horizontal Left reverse samplen 1.5 maxrows 2 width 2
    plot in using 'block':(column('seq') < 0 ? 1 : 1/0) with boxes fill empty linecolor rgb '#999999' dashtype 2 title 'free', \
         for [b=0:n-1] in using 'block':(column('seq') == b ? column('tokens') / bs : 1/0) with boxes \
            linecolor rgb sprintf('%s', col[b % 7 + 1]) title sprintf(held[b + 1] > 0 ? 'prompt %d' : 'prompt %d: finished, blocks returned', b + 1), \
         in using 'block':(column('seq') >= 0 ? column('tokens') / bs + 0.06 : 1/0):(sprintf('p%d·%d', column('seq') + 1, column('logical'))) \
            with labels font ',16' notitle
    set output
}
evaluate publish(out)
