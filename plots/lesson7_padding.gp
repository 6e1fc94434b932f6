reset
# lesson7_padding.gp — a padded batch: bytes of the stacked KV tensor (every sequence
# padded to the longest) vs bytes holding tokens, per decode step; the gap is padding.
# Reads padding.csv from `kvscope batch` (columns step, bytes_used, bytes_stacked).
# By hand, from the repository root:
#   gnuplot -e "in='data/lesson7/mask/padding.csv'; out='/tmp/padding'" plots/lesson7_padding.gp
load 'plots/style.gp'
evaluate need_vars('in out')
evaluate need_columns(in, 'step bytes_used bytes_stacked')
KiB = 1024.0

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set title 'Padded batch: the stacked cache vs the tokens it holds'
    set xlabel 'decode step (0 = after the prefills)'
    set ylabel 'KV-cache bytes (KiB)'
    set xrange [0:*]
    set yrange [0:*]
    set key top left Left reverse
    set style fill transparent solid 0.25 noborder
    plot in using 'step':(column('bytes_used') / KiB):(column('bytes_stacked') / KiB) \
            with filledcurves linecolor rgb '#D55E00' title 'padding (zeros)', \
         in using 'step':(column('bytes_stacked') / KiB) with lines ls 2 title 'stacked tensor: B × longest', \
         in using 'step':(column('bytes_used') / KiB) with lines ls 1 title 'bytes holding tokens'
    set output
}
evaluate publish(out)
