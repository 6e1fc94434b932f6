reset
# lesson3_drift.gp — how far the logits drift when the cache keeps only the newest K/V
# (the source article's eval-mode layer) compared with the correct cache, step by step.
# Reads two CSVs written by `kvscope verify --csv FILE` (columns step,max_abs_diff,same_token):
#   in  — with --article-bug (data/lesson3/article_bug.csv)
#   ok  — without it (data/lesson3/verify.csv)
# first (optional): the first step that drifts, for the title.
# prompt (optional) is shown in the title; its characters need a CJK font (fonts-wqy-zenhei).
# Writes out.png (1600x900) and out.svg. By hand, from the repository root:
#   gnuplot -e "in='data/lesson3/article_bug.csv'; ok='data/lesson3/verify.csv'; prompt='人工智能是'; out='/tmp/drift'" plots/lesson3_drift.gp
load 'plots/style.gp'
evaluate need_vars('in ok out')
evaluate need_columns(in, 'step max_abs_diff same_token')
evaluate need_columns(ok, 'step max_abs_diff same_token')
ptitle = exists('prompt') ? sprintf("\n(prompt \"%s\")", prompt) : ''

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set title 'A cache that keeps only the newest K/V: the logits drift'.(exists('first') ? sprintf(' from step %d', first) : '').ptitle
    set xlabel 'decode step (0 = prefill)'
    set ylabel 'max |Δlogit| vs recomputing everything'
    set xrange [-0.5:*]
    set yrange [-0.5:*]
    set xtics 1
    set key at graph 0.98, graph 0.42 right Left reverse
    plot in using 'step':'max_abs_diff' with linespoints ls 2 title "the article's cache (its bug)", \
         ok using 'step':'max_abs_diff' with linespoints ls 1 title 'the correct cache: exactly 0', \
         in using 'step':(column('same_token') == 0 ? column('max_abs_diff') : 1/0) with points ls 7 pointsize 3.5 title 'greedy next token differs'
    set output
}
evaluate publish(out)
