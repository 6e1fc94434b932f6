reset
# lesson8_ablation.gp — the induction circuit shown causally: each head of the
# previous-token head's layer ablated in turn (its output z replaced by its mean over a text,
# kvscope heads --ablate),
# and what the induction head and the model then do on random bytes repeated. Left: the
# induction head's score (the lowest over the copy lengths); right: the loss on the second
# copy (bits per byte), beside the first copy's, which no head can predict. One bar per
# ablation ("none" first); the previous-token head's bar in vermillion, the others blue.
# Reads ablation.csv (columns ablated, induction, first_bits, second_bits) written by
# lessons/lesson8.sh; prev and ind name the heads (layer.head), R the copy length.
# By hand, from the repository root:
#   gnuplot -e "in='data/lesson8/ablation.csv'; prev='0.4'; ind='1.4'; R=100; out='/tmp/ablation'" plots/lesson8_ablation.gp
load 'plots/style.gp'
evaluate need_vars('in prev ind R out')
evaluate need_columns(in, 'ablated induction first_bits second_bits')
stats in using 'first_bits' nooutput  # about the same whatever is ablated: nothing predicts it
fb = STATS_mean
colour(a) = a eq prev ? 0xD55E00 : (a eq 'none' ? 0x999999 : 0x0072B2)

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set multiplot layout 1, 2 title sprintf("One head of layer %s ablated at a time: induction head %s's score, and the copying", substr(prev, 1, strstrt(prev, '.') - 1), ind) font ',24'
    unset key
    set style fill solid 1.0 noborder
    set boxwidth 0.7
    set xtics scale 0 font ',23'
    set ytics font ',23'
    set grid noxtics ytics
    set xlabel 'head ablated (layer.head)' font ',23'
    set xrange [-0.6 : *]
    set title sprintf('induction score of head %s', ind) font ',23'
    px = int(substr(prev, strstrt(prev, '.') + 1, strlen(prev))) + 1   # its bar: after 'none'
    set label 2 "the previous-token head" at px, 0.42 center rotate by 90 font ',23' textcolor rgb '#D55E00' front
    set yrange [0 : 1]
    set ytics 0.25
    plot in using 0:'induction':(colour(strcol('ablated'))):xtic(strcol('ablated')) with boxes lc rgb variable notitle, \
         in using 0:'induction':(sprintf('%.2f', column('induction'))):(colour(strcol('ablated'))) with labels offset 0, 0.8 font ',23' textcolor rgb variable notitle
    unset label 2
    set title sprintf('loss on the second copy of %d random bytes', R) font ',23'
    set yrange [0 : fb * 1.25]
    set ytics 2
    set ylabel 'bits per byte' font ',23'
    set label 1 sprintf('first copy: %.1f', fb) at graph 0.02, first fb left offset 0, 0.8 font ',23' textcolor rgb '#555555'
    plot in using 0:'second_bits':(colour(strcol('ablated'))):xtic(strcol('ablated')) with boxes lc rgb variable notitle, \
         in using 0:'second_bits':(sprintf('%.1f', column('second_bits'))):(colour(strcol('ablated'))) with labels offset 0, 0.8 font ',23' textcolor rgb variable notitle, \
         fb with lines ls 8 notitle
    unset label 1
    unset multiplot
    set output
}
evaluate publish(out)
