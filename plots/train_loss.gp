reset
# train_loss.gp — the loss of `kvscope train`, in bits per byte: the training batches step
# by step, the validation split where it was measured, and the n-gram baselines counted on
# the same split (a unigram, the best order-1 and order-2 byte models).
# Reads, from the folder `kvscope train --out DIR` writes:
#   log  — train_log.csv (step,train_loss,val_loss,lr,grad_norm; losses in nats)
#   eval — eval.csv (model,context_bytes,bits_per_byte,smoothing)
# title (optional) replaces the first line of the title.
# Writes out.png (1600x900) and out.svg. kvscope train draws it into DIR/loss; by hand,
# from the repository root:
#   gnuplot -e "log='data/model/train_log.csv'; eval='data/model/eval.csv'; out='/tmp/loss'" plots/train_loss.gp
load (exists('scripts') ? scripts : 'plots').'/style.gp'  # scripts: this folder, set by kvscope
evaluate need_vars('log eval out')
evaluate need_columns(log, 'step train_loss val_loss lr grad_norm')
evaluate need_columns(eval, 'model context_bytes bits_per_byte smoothing')
bits(nats) = nats / log(2)
baseline(name) = real(system(sprintf("awk -F, '$1 == \"%s\" { print $3 }' '%s'", name, eval)))
uni = baseline('unigram'); o1 = baseline('order1'); o2 = baseline('order2'); final = baseline('gpt2')
stats log using 'step' nooutput
last = STATS_max
head = exists('title') ? title : 'kvscope train: loss in bits per byte'

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set title sprintf("%s\nvalidation split: %.2f bits/byte after %d steps (order-2 byte model: %.2f)", \
                      head, final, last, o2) noenhanced
    set xlabel 'optimizer step'
    set ylabel 'loss (bits per byte)'
    set xrange [0:last * 1.02]
    set yrange [0:*]
    set key top right
    set arrow 1 from 0, uni to last, uni nohead ls 8
    set arrow 2 from 0, o1 to last, o1 nohead ls 8
    set arrow 3 from 0, o2 to last, o2 nohead ls 4 dashtype 2
    set label 1 sprintf('unigram %.2f', uni) at last, uni offset -1, 0.7 right textcolor rgb '#666666'
    set label 2 sprintf('order-1 byte model (previous byte) %.2f', o1) at last, o1 offset -1, 0.7 right textcolor rgb '#666666'
    set label 3 sprintf('order-2 byte model (two previous bytes) %.2f', o2) at last, o2 offset -1, 0.7 right textcolor rgb '#B07800'
    plot log using 'step':(bits(column('train_loss'))) with lines ls 6 linewidth 1.5 title 'training batch', \
         log using 'step':(strlen(strcol('val_loss')) ? bits(column('val_loss')) : 1/0) smooth unique with linespoints ls 1 title 'validation split'
    set output
}
evaluate publish(out)
