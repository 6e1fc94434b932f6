reset
# lesson9_budget.gp — what each policy loses as its budget shrinks, and what the oracle says
# is left to gain. Left: the share of the full cache's attention weight that falls on evicted
# positions (mean over layers, heads and decode steps; bars: the head that loses least and
# most). Right: top-1 agreement with the full cache's next-token choice. x: the budget K.
# Reads mass_summary.csv (policy,budget,mean,min,max) and frontier.csv from lesson9.sh.
# By hand: gnuplot -e "mass='data/lesson9/mass_summary.csv'; in='data/lesson9/frontier/frontier.csv'; out='/tmp/budget'" plots/lesson9_budget.gp
load 'plots/style.gp'
evaluate need_vars('mass in out')
evaluate need_columns(mass, 'policy budget mean min max')
evaluate need_columns(in, 'lever policy budget top1')
array P[4] = ['window', 'h2o', 'snapkv', 'oracle']
array NAME[4] = ['window + sinks', 'H2O', 'SnapKV', 'oracle']
array LS[4] = [2, 4, 5, 3]
array DX[4] = [0.88, 0.96, 1.04, 1.12]
do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set multiplot layout 1, 2 title 'Eviction: attention weight lost and next-token agreement against the budget' font ',23' margins 0.10, 0.98, 0.16, 0.86 spacing 0.09, 0
    set logscale x 2
    set xrange [22 : 180]
    set xtics (32, 64, 128) font ',23'
    set ytics font ',23'
    set xlabel 'budget K (positions per head)' font ',23'
    set ylabel "share of the full cache's weight evicted" font ',23'
    set yrange [0 : 1]
    unset key
    plot for [i = 1 : 4] mass using ($2 * DX[i]):(strcol(1) eq P[i] ? $3 : NaN):(strcol(1) eq P[i] ? $4 : NaN):(strcol(1) eq P[i] ? $5 : NaN) \
         with yerrorlines ls LS[i] title NAME[i]
    set ylabel 'top-1 agreement with the full cache' font ',23'
    set yrange [0.5 : 1.02]
    set key bottom right Left reverse font ',23' samplen 2 spacing 1.1 opaque
    plot for [i = 1 : 4] in using (strcol('lever') eq 'evict' && strcol('policy') eq P[i] ? column('budget') : NaN):'top1' \
         with linespoints ls LS[i] title NAME[i]
    unset multiplot
    set output
}
evaluate publish(out)
