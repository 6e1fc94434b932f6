reset
# lesson9_copy.gp — copying kept or lost: texts that repeat at their end a line they began
# with; the share of the repeat's bytes whose first choice is the text's own byte
# (teacher-forced), for each policy at each budget, the full cache as a dashed line.
# Reads copy.csv (label,policy,budget,bits_per_byte,top1,copied,predictions) of kvscope frontier.
# By hand: gnuplot -e "in='data/lesson9/frontier/copy.csv'; out='/tmp/copy'" plots/lesson9_copy.gp
load 'plots/style.gp'
evaluate need_vars('in out')
evaluate need_columns(in, 'policy budget copied')
FULL = real(system(sprintf("awk -F, 'NR > 1 && $2 == \"full\" { print $6 }' '%s'", in)))
array P[4] = ['window', 'h2o', 'snapkv', 'oracle']
array NAME[4] = ['window + sinks', 'H2O', 'SnapKV', 'oracle']
array C[4] = ['#D55E00', '#E69F00', '#CC79A7', '#009E73']
slot(b) = b == 32 ? 0 : b == 64 ? 1 : 2
do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set title 'Copying a repeated line: bytes predicted right on the repeat, by policy and budget' font ',23'
    set ylabel 'share of the repeat predicted right' font ',23'
    set xlabel 'budget K (positions per head)' font ',23'
    set xrange [-0.6 : 2.6]
    set yrange [0 : 1]
    set xtics ('32' 0, '64' 1, '128' 2) font ',23'
    set ytics font ',23'
    set grid noxtics ytics
    set style fill solid 1.0 noborder
    set boxwidth 0.18
    set key outside right center vertical font ',23' samplen 1.5
    set rmargin 24
    set arrow 1 from graph 0, first FULL to graph 1, first FULL nohead linestyle 8
    set label 1 sprintf('full cache %.2f', FULL) at graph 1, first FULL left offset 0.5, 0 font ',23' textcolor rgb '#666666'
    plot for [i = 1 : 4] in using (strcol('policy') eq P[i] ? slot(column('budget')) + (i - 2.5) * 0.2 : NaN):'copied' \
         with boxes lc rgb C[i] title NAME[i]
    set output
}
evaluate publish(out)
