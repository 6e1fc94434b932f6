reset
# heads.gp — what each attention head does: four layer × head heatmaps from `kvscope heads`.
#   previous token  mean weight of a query on the token before it (a text)
#   induction       mean weight of a second-copy token on the token after its first copy
#                   (random bytes repeated twice)
#   sink            mean weight on position 0 (a text)
#   entropy         mean entropy of the attention row, bits (0: one key; high: spread out)
# Reads heads.csv (layer,head,prev_token,induction,sink,entropy_bits).
# model (optional) names the model in the title; copy (optional) the copy length.
# Writes out.png (1600x900) and out.svg. By hand, from the repository root:
#   gnuplot -e "in='data/heads/heads.csv'; out='/tmp/heads'; model='data/model'" plots/heads.gp
load (exists('scripts') ? scripts : 'plots').'/style.gp'  # scripts: this folder, set by kvscope
unset key
evaluate need_vars('in out')
evaluate need_columns(in, 'layer head prev_token induction sink entropy_bits')
stats in using 'layer':'head' nooutput
L = int(STATS_max_x) + 1
NH = int(STATS_max_y) + 1
stats in using 'entropy_bits' nooutput
emax = STATS_max > 0 ? ceil(STATS_max) : 1
name = exists('model') ? model : 'the model'

# viridis in 9 stops: src/colormap.c's table at 0, 1/8, ..., 1
set palette defined (0 '#440154', 1 '#472d7b', 2 '#3b528b', 3 '#2c728e', 4 '#21918c', \
                     5 '#27ad81', 6 '#5cc863', 7 '#aadc32', 8 '#fde725')
cols = 'prev_token induction sink entropy_bits'
# the induction panel names its copy length: a head may copy at one distance only
ind = exists('copy') ? sprintf('induction, %d-byte copies: weight on the byte after the first copy', copy) \
                     : 'induction: weight on the token after the first copy'
titles = sprintf('"previous token: weight on i − 1" "%s" "sink: weight on position 0" "entropy of the row (bits)"', ind)
# the cell's value, printed in black on light cells and white on dark ones
ink(v, top) = v / top > 0.6 ? 0x000000 : 0xffffff

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set multiplot title sprintf("What the attention heads of %s do: %d layers × %d heads", name, L, NH) \
        noenhanced font ',24' layout 2, 2 margins 0.06, 0.93, 0.08, 0.86 spacing 0.13, 0.17
    do for [k = 1:4] {
        col = word(cols, k)
        top = k == 4 ? emax : 1
        set title word(titles, k) noenhanced font ',18'
        set xrange [-0.5:NH - 0.5]
        set yrange [L - 0.5:-0.5]
        set xtics 1 scale 0 font ',15'
        set ytics 1 scale 0 font ',15'
        set xlabel 'head' font ',16' offset 0, 0.6
        set ylabel 'layer' font ',16' offset 1, 0
        set grid noxtics noytics nomxtics nomytics
        set border 0
        set cbrange [0:top]
        set cbtics font ',13'
        set colorbox vertical user origin graph 1.03, graph 0 size character 1.5, graph 1
        plot in using 'head':'layer':(0.5):(0.5):(column(col)) \
                 with boxxyerror fillcolor palette z fillstyle solid 1.0 noborder notitle, \
             in using 'head':'layer':(sprintf('%.2f', column(col))):(ink(column(col), top)) \
                 with labels textcolor rgb variable font ',15' notitle
    }
    unset multiplot
    set output
}
evaluate publish(out)
