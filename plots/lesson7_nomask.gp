reset
# lesson7_nomask.gp — how far each sequence's next-token log-probabilities move when the
# padded batch is run WITHOUT an attention mask (one source article's pad_kv_cache),
# compared with running the sequence alone; with the mask the difference is exactly 0.
# The masked run is drawn first, as a band at 0, so that a prompt the missing mask does
# not touch (the longest one: it has no padding) stays visible on top of it.
# Reads two diff.csv files from `kvscope batch` (columns step, seq, max_abs_dlogprob):
#   in — with --no-mask;  ok — with the mask.  n — number of sequences;
#   longest (optional) — the 1-based number of the prompt without padding.
# By hand, from the repository root:
#   gnuplot -e "in='data/lesson7/nomask/diff.csv'; ok='data/lesson7/mask/diff.csv'; n=4; longest=3; out='/tmp/nomask'" plots/lesson7_nomask.gp
load 'plots/style.gp'
evaluate need_vars('in ok n out')
evaluate need_columns(in, 'step seq max_abs_dlogprob')
evaluate need_columns(ok, 'step seq max_abs_dlogprob')
if (!exists('longest')) longest = 0
name(b) = b + 1 == longest ? sprintf('prompt %d: unpadded, 0', b + 1) : sprintf('prompt %d, no mask', b + 1)
array pt[6] = [5, 9, 13, 11, 7, 15]

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set title 'Padding without a mask changes the answers; with the mask nothing moves'
    set xlabel 'decode step (0 = prefill, run alone)'
    set ylabel 'max |Δ log p| vs the sequence alone (nats)'
    set xrange [-0.5:*]
    set yrange [-0.8:*]
    # the legend right of the plot, never over a point
    set rmargin at screen 0.72
    set key at screen 0.73, graph 1 left top Left reverse font ',23' spacing 1.3
    plot ok using 'step':'max_abs_dlogprob' with lines lc rgb '#bbbbbb' lw 10 title 'with the mask: all 0', \
         for [b=0:n-1] in using 'step':(column('seq') == b ? column('max_abs_dlogprob') : 1/0) \
            with points ls (b + 2) pointtype (b + 1 == longest ? 6 : pt[b % 6 + 1]) pointsize (b + 1 == longest ? 1.6 : 1.8) title name(b)
    set output
}
evaluate publish(out)
