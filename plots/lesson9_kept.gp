reset
# lesson9_kept.gp — which positions each policy keeps, side by side on one text: one panel
# per policy (window + sinks, H2O, SnapKV, oracle), a row per head of one layer, a column
# per position; blue: kept at the last decode step, grey: evicted; a black dot where the
# full cache's last query puts at least 5 % of its weight. From kvscope frontier's kept.csv
# (policy,budget,layer,head,position,kept,weight), at budget K and layer `layer`; copy1 and
# copy2 are where the text's line and its repeat begin (len: its length).
# By hand: gnuplot -e "in='data/lesson9/frontier/kept.csv'; K=64; layer=3; copy1=1; copy2=178; len=77; out='/tmp/kept'" plots/lesson9_kept.gp
load 'plots/style.gp'
evaluate need_vars('in out K layer copy1 copy2 len')
evaluate need_columns(in, 'policy budget layer head position kept weight')
T = copy2 + len
set palette defined (0 '#DDDDDD', 1 '#0072B2')
set cbrange [0 : 1]
unset colorbox
unset key
sel(p) = sprintf("< awk -F, 'NR > 1 && $1 == \"%s\" && $2 == %d && $3 == %d' '%s'", p, K, layer, in)
array P[4] = ['window', 'h2o', 'snapkv', 'oracle']
array NAME[4] = ['window + sinks', 'H2O', 'SnapKV', 'oracle']
do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set multiplot layout 4, 1 title sprintf("Which positions each policy keeps: layer %d, %d positions per head, one text", layer, K) font ',23' margins 0.09, 0.97, 0.17, 0.90 spacing 0, 0.035
    set xrange [-0.5 : T - 0.5]
    set yrange [-0.5 : 5.5]
    set ytics 0, 5, 5 font ',23'
    set grid noxtics noytics
    set border 0
    set tics scale 0
    do for [i = 1 : 4] {
        set ylabel NAME[i] font ',23' offset 1, 0
        if (i < 4) { set format x '' } else { set format x '%g'; set xtics font ',23'; set xlabel 'position in the text (one row per head, head 0 at the bottom)' font ',23' offset 0, 0.3 }
        unset label
        unset arrow
        if (i == 1) {
            set arrow 1 from copy1, 5.85 to copy1 + len - 1, 5.85 heads size 2, 90 linecolor rgb '#333333' linewidth 1.5
            set arrow 2 from copy2, 5.85 to copy2 + len - 1, 5.85 heads size 2, 90 linecolor rgb '#333333' linewidth 1.5
            set label 1 'the line' at copy1 + len / 2.0, 6.5 center font ',23' textcolor rgb '#333333'
            set label 3 "■ kept" at screen 0.22, screen 0.03 left font ',23' textcolor rgb '#0072B2'
            set label 4 "■ evicted" at screen 0.32, screen 0.03 left font ',23' textcolor rgb '#AAAAAA'
            set label 5 "● where the full cache's last query looks (≥ 5 % of its weight)" at screen 0.44, screen 0.03 left font ',23' textcolor rgb '#000000'
            set label 2 'its repeat, decoded' at copy2 + len / 2.0, 6.5 center font ',23' textcolor rgb '#333333'
        }
        plot sel(P[i]) using 5:4:6 with image pixels notitle, \
             '' using ($7 >= 0.05 ? $5 : NaN):4 with points pt 7 ps 0.6 lc rgb '#000000' notitle
    }
    unset multiplot
    set output
}
evaluate publish(out)
