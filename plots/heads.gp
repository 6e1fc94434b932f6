reset
# heads.gp — what each attention head does: five layer × head heatmaps and the induction
# score at each copy length, from `kvscope heads`.
#   previous token  mean weight of a query on the token before it (a text), before the
#                   split position (default N/2, the training repeats' distance) and after:
#                   a head that learned one fixed distance is bright in one panel only
#   induction       mean weight of a second-copy token on the token after its first copy
#                   (random bytes repeated twice), the lowest over the copy lengths
#   sink            mean weight on position 0 (a text: the start token, if the model has one)
#   entropy         mean entropy of the attention row, bits (0: one key; high: spread out)
#   per copy length every head's induction score, one line per copy length: an induction
#                   head is high on every line, a head that copies at one distance on one
# Reads heads.csv (layer,head,prev_before,prev_after,induction,sink,entropy_bits) and lens,
# induction_heads.csv (layer,head,copy_len,induction).
# model (optional) names the model in the title; split (optional) the split position.
# Writes out.png (1600x900) and out.svg. By hand, from the repository root:
#   gnuplot -e "in='data/heads/heads.csv'; lens='data/heads/induction_heads.csv'; out='/tmp/heads'; model='data/model'" plots/heads.gp
load (exists('scripts') ? scripts : 'plots').'/style.gp'  # scripts: this folder, set by kvscope
unset key
evaluate need_vars('in lens out')
evaluate need_columns(in, 'layer head prev_before prev_after induction sink entropy_bits')
evaluate need_columns(lens, 'layer head copy_len induction')
stats in using 'layer':'head' nooutput
L = int(STATS_max_x) + 1
NH = int(STATS_max_y) + 1
stats in using 'entropy_bits' nooutput
emax = STATS_max > 0 ? ceil(STATS_max) : 1
# the copy lengths, in the order of the file: a head's rows list them all
# (commands built by concatenation: gnuplot's sprintf mangles a "%%" in a long format)
copies = system("awk -F, 'NR > 1 && $1 == 0 && $2 == 0 { printf \"%s \", $3 }' '" . lens . "'")
name = exists('model') ? model : 'the model'
at = exists('split') ? sprintf('%d', split) : 'the split'

# viridis in 9 stops: src/observe/colormap.c's table at 0, 1/8, ..., 1
set palette defined (0 '#440154', 1 '#472d7b', 2 '#3b528b', 3 '#2c728e', 4 '#21918c', \
                     5 '#27ad81', 6 '#5cc863', 7 '#aadc32', 8 '#fde725')
cols = 'prev_before prev_after induction sink entropy_bits'
titles = sprintf('"previous token, i < %s" "previous token, i ≥ %s" "induction, worst R" "sink: weight on 0" "row entropy (bits)"', at, at)
# the cell's value, printed in black on light cells and white on dark ones
ink(v, top) = v / top > 0.6 ? 0x000000 : 0xffffff

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set multiplot title sprintf("What the attention heads of %s do: %d layers × %d heads (weights in hundredths)", name, L, NH) \
        noenhanced font ',23' layout 2, 3 margins 0.06, 0.92, 0.12, 0.85 spacing 0.10, 0.17
    do for [k = 1:5] {
        col = word(cols, k)
        top = k == 5 ? emax : 1
        set title word(titles, k) noenhanced font ',23'
        set xrange [-0.5:NH - 0.5]
        set yrange [L - 0.5:-0.5]
        set xtics 1 scale 0 font ',23'
        set ytics 1 scale 0 font ',23'
        if (k > 3) { set xlabel 'head' font ',23' offset 0, 0.6 } else { unset xlabel }
        if (k == 1 || k == 4) { set ylabel 'layer' font ',23' offset 0.5, 0 } else { unset ylabel }
        set grid noxtics noytics nomxtics nomytics
        set border 0
        set cbrange [0:top]
        if (top == 1) { set cbtics ('0' 0, '100' 1) font ',23' } else { set cbtics 0, 2, top font ',23' }
        set colorbox vertical user origin graph 1.03, graph 0 size character 1.2, graph 1
        plot in using 'head':'layer':(0.5):(0.5):(column(col)) \
                 with boxxyerror fillcolor palette z fillstyle solid 1.0 noborder notitle, \
             in using 'head':'layer':(top == 1 ? sprintf('%.0f', 100 * column(col)) : sprintf('%.1f', column(col))):(ink(column(col), top)) \
                 with labels textcolor rgb variable font ',23' notitle
    }
    # the sixth panel: each head's induction against the copy length R, one line per head;
    # the heads that copy (at least 0.3 at some length, named layer.head) in colour, the
    # others grey
    unset colorbox
    set border 3
    set title 'induction against the copy distance R' font ',23'
    set logscale x 2
    set xrange [int(word(copies, 1)) / 1.2 : int(word(copies, words(copies))) * 1.2]
    set yrange [0:2.4] # the legend above the lines
    set xtics () scale 0.5 font ',23' norotate
    do for [i = 1:words(copies)] { set xtics add (word(copies, i) int(word(copies, i))) }
    set ytics (0, 0.5, 1) font ',23'
    set grid noxtics ytics
    set xlabel 'R (bytes)' font ',23' offset 0, 0.6
    unset ylabel
    set key at graph 1, graph 1 right top font ',23' samplen 1.2 spacing 0.9 opaque
    copiers = system("awk -F, 'NR > 1 && $4 >= 0.3 && !s[$1 \".\" $2]++ { printf \"%s.%s \", $1, $2 }' '" . lens . "'")
    id(l, h) = sprintf('%d.%d', l, h)
    subst(s) = s[1:strstrt(s, '.') - 1] . ' ' . s[strstrt(s, '.') + 1:] # '1.4' -> '1 4'
    plot for [i = 0:L * NH - 1] lens using 'copy_len':(column('layer') * NH + column('head') == i && strstrt(' '.copiers, ' '.id(column('layer'), column('head')).' ') == 0 ? column('induction') : NaN) \
             with lines lc rgb '#bbbbbb' lw 2 title (i == 0 ? 'other heads' : ''), \
         for [k = 1:words(copiers)] lens using 'copy_len':(id(column('layer'), column('head')) eq word(copiers, k) ? column('induction') : NaN) \
             with linespoints linestyle k title sprintf('layer %s, head %s', word(subst(word(copiers, k)), 1), word(subst(word(copiers, k)), 2))
    unset logscale x
    unset key
    unset multiplot
    set output
}
evaluate publish(out)
