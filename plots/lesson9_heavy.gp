reset
# lesson9_heavy.gp — heavy hitters: the attention each position accumulates over a text
# (the sum of the weights every query gives it, as H2O ranks them), sorted, against its
# rank, on log-log axes: a power law would be a straight line. One line per layer (mean
# over its heads and the texts). Reads heavy.csv (layer,rank,accumulated) of kvscope frontier.
# By hand: gnuplot -e "in='data/lesson9/frontier/heavy.csv'; out='/tmp/heavy'" plots/lesson9_heavy.gp
load 'plots/style.gp'
evaluate need_vars('in out')
evaluate need_columns(in, 'layer rank accumulated')
stats in using 'layer' nooutput
NL = int(STATS_max) + 1
do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set title 'Accumulated attention by rank (log-log): heavy hitters, one line per layer' font ',23'
    set xlabel 'rank of the position (1: the most attended)' font ',23'
    set ylabel 'attention accumulated (sum of weights)' font ',23'
    set logscale xy
    stats in using 'rank' nooutput
    set xrange [1 : STATS_max]
    set format y '10^{/*1.15 %L}'
    set xtics font ',23'
    set ytics font ',23'
    set key outside right center vertical font ',23' samplen 2
    set rmargin 18
    plot for [l = 0 : NL - 1] in using (column('layer') == l ? column('rank') : NaN):'accumulated' \
         with lines ls (l + 1) title sprintf('layer %d', l)
    set output
}
evaluate publish(out)
