reset
# lesson8_phase.gp — the phase change in the shipped model's training, drawn as Olsson
# et al. (2022) draw it: the training loss (top) and the heads' scores (bottom) against
# the step, one x axis, the steps where the induction score jumped shaded in both panels.
# Top: the loss of every step (thin, light) and its mean over 50 steps (blue), the
# validation loss where it was measured (points). Bottom: the best induction head's score
# and the best previous-token head's on the training batches, every 100 steps.
# Reads train_log.csv (columns step, train_loss, val_loss, induction, prev_token; loss in
# nats per byte) written by `kvscope train`; from and to bound the shaded steps.
# By hand, from the repository root:
#   gnuplot -e "in='data/model/train_log.csv'; from=1200; to=1500; out='/tmp/phase'" plots/lesson8_phase.gp
load 'plots/style.gp'
evaluate need_vars('in from to out')
evaluate need_columns(in, 'step train_loss val_loss induction prev_token')
stats in using 'step' nooutput
smax = STATS_max
# step,mean: the loss's mean over the last 50 steps, from step 50 on, in bits per byte
# (the log's loss is in nats: / ln 2)
# (built by concatenation, without sprintf: gnuplot's sprintf mangles a "%%" in a long format)
smooth50 = "< awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } { k++; v[k - 50 * int(k / 50)] = $c[\"train_loss\"] / log(2); if (k >= 50) { s = 0; for (j = 0; j < 50; j++) s += v[j]; print $c[\"step\"] \",\" s / 50 } }' '" . in . "'"

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set multiplot title sprintf("The phase change: the induction head forms in steps %d–%d, and the loss falls with it", from, to) font ',24'
    set xrange [0 : smax]
    set object 1 rect from from, graph 0 to to, graph 1 fc rgb '#F6D7B0' fs solid 0.6 noborder behind
    # top: the loss
    set lmargin at screen 0.115; set rmargin at screen 0.97
    set tmargin at screen 0.88; set bmargin at screen 0.52
    set format x ''
    set ylabel 'loss (bits per byte)' font ',23'
    set ytics 0.5 font ',23'
    set xtics 500 font ',23'
    set yrange [1.2 : 4.6]
    set key top right font ',23' samplen 2 opaque
    set label 1 sprintf('steps %d–%d', from, to) at (from + to) / 2.0, graph 0.07 center font ',23' textcolor rgb '#8a5a00'
    plot in using 'step':(column('train_loss') / log(2)) with lines lc rgb '#9cc8e6' lw 1 title 'each step', \
         smooth50 using 1:2 with lines ls 1 lw 4 title 'mean of 50 steps', \
         in using 'step':(column('val_loss') / log(2)) with points ls 7 pt 7 ps 1.2 title 'validation'
    # bottom: the scores
    set tmargin at screen 0.48; set bmargin at screen 0.16
    set format x '%g'
    set xlabel 'training step' font ',23'
    set ylabel 'score (best head)' font ',23'
    set yrange [0 : 1.05]
    set ytics 0.25
    set key bottom right font ',23' samplen 2 opaque
    unset label 1
    plot in using 'step':'induction' with linespoints ls 2 title 'induction', \
         in using 'step':'prev_token' with linespoints ls 3 title 'previous token'
    unset multiplot
    set output
}
evaluate publish(out)
