reset
# lesson7_nomask.gp — how far each sequence's next-token log-probabilities move when
# the padded batch is run WITHOUT an attention mask (one source article's
# pad_kv_cache), compared with running the sequence alone; with the mask the
# difference is exactly 0.
# Reads two diff.csv files from `kvscope batch` (columns step, seq, max_abs_dlogprob):
#   in — with --no-mask;  ok — with the mask.  n — number of sequences.
# By hand, from the repository root:
#   gnuplot -e "in='data/lesson7/nomask/diff.csv'; ok='data/lesson7/mask/diff.csv'; n=4; out='/tmp/nomask'" plots/lesson7_nomask.gp
load 'plots/style.gp'
evaluate need_vars('in ok n out')
evaluate need_columns(in, 'step seq max_abs_dlogprob')
evaluate need_columns(ok, 'step seq max_abs_dlogprob')

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set title 'Padding without a mask changes the answers; with the mask nothing moves'
    set xlabel 'decode step (0 = prefill, run alone)'
    set ylabel 'max |Δ log p| vs the sequence alone (nats)'
    set xrange [0:*]
    set yrange [-0.3:*]
    set key top right Left reverse
    plot for [b=0:n-1] in using 'step':(column('seq') == b ? column('max_abs_dlogprob') : 1/0) \
            with points ls (b + 2) pointsize 1.8 title sprintf('prompt %d, no mask', b + 1), \
         ok using 'step':'max_abs_dlogprob' with points ls 7 pointtype 6 pointsize 1.0 \
            title 'every prompt, with the mask: 0'
    set output
}
