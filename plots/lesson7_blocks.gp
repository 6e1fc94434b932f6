reset
# lesson7_blocks.gp — the paged cache's block pool at one decode step: one bar per
# block (block id on x), coloured by the sequence that owns it, as tall as the share
# of its slots that hold tokens; the label is the block's place in its owner's block
# table ("p1·2" = prompt 1's third block). Free blocks are empty outlines. A prompt
# that owns no block at this step (it finished) has no legend entry: the subtitle names it.
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
finished = ''
do for [b=0:n-1] { if (held[b + 1] == 0) { finished = finished . (finished eq '' ? '' : ', ') . sprintf('%d', b + 1) } }
array col[7] = ['#E69F00', '#56B4E9', '#009E73', '#F0E442', '#0072B2', '#D55E00', '#CC79A7']

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set title sprintf("Paged KV cache at decode step %d: %d blocks of %d tokens%s", step, nb, bs, \
        finished eq '' ? '' : sprintf("\n{/*0.8 prompt %s finished: its blocks went back to the pool}", finished))
    set xlabel 'block id in the pool'
    set ylabel 'share of the block holding tokens'
    set xrange [-0.6:nb - 0.4]
    set yrange [0:1.12]
    set xtics 1 out nomirror
    set ytics 0, 0.25, 1
    set format y '%g'
    set grid noxtics
    set boxwidth 0.85
    set style fill solid 1.0 border linecolor rgb '#555555'
    # the legend right of the pool, outside the bars
    set rmargin at screen 0.80
    set key at screen 0.81, graph 1 left top Left reverse samplen 1.5
    plot in using 'block':(column('seq') < 0 ? 1 : 1/0) with boxes fill empty linecolor rgb '#999999' dashtype 2 title 'free', \
         for [b=0:n-1] in using 'block':(column('seq') == b ? column('tokens') / bs : 1/0) with boxes \
            linecolor rgb sprintf('%s', col[b % 7 + 1]) title (held[b + 1] > 0 ? sprintf('prompt %d', b + 1) : ''), \
         in using 'block':(column('seq') >= 0 ? column('tokens') / bs + 0.06 : 1/0):(sprintf('p%d·%d', column('seq') + 1, column('logical'))) \
            with labels font ',23' notitle
    set output
}
evaluate publish(out)
