reset
# kvmem.gp — KV-cache size of real models against the number of tokens, one line per
# model (GPT-2 small/medium/large/xl up to their 1024-token context, LLaMA-2-7B up to
# 4096), from bytes = 2 · layers · kv_heads · head_dim · tokens · batch · bytes per
# element. Marks the source article's LLaMA-7B figure (32 MiB at 2048 tokens: one
# head's cache) below the right one (1 GiB) when the sweep is in fp16.
# Reads kvmem.csv from `kvscope kvmem --out DIR` (column tokens, then one column of
# bytes per model; a cell is empty past the model's context).
# By hand:
#     gnuplot -e "in='data/kvmem/kvmem.csv'; out='plots/kvmem_models'" plots/kvmem.gp
# Optional: dtype='fp16' (the --dtype of the sweep, shown in the title and the axis);
# only='gpt2 llama-2-7b' (the model columns to draw; default: every column).
load 'plots/style.gp'
evaluate need_vars('in out')
evaluate need_columns(in, 'tokens')
if (!exists('dtype')) dtype = 'fp16'
if (!exists('only')) only = ''

names = system(sprintf("head -n 1 '%s' | tr -d '\r' | tr ',' ' '", in))
ncols = words(names)
keep(i) = only eq '' || strstrt(' ' . only . ' ', ' ' . word(names, i) . ' ') > 0
if (ncols < 2) { exit error sprintf("%s has no model column after 'tokens'", in) }
stats in using 'tokens' nooutput
Tmax = STATS_max
GiB = 1024.0 ** 3
human(b) = b < 1024 ** 2 ? sprintf('%.3g KiB', b / 1024.0) : b < GiB ? sprintf('%.3g MiB', b / 1024.0 ** 2) : sprintf('%.3g GiB', b / GiB)
# each model's largest size and the tokens it is reached at, for the legend
array top_b[ncols]
array top_t[ncols]
do for [i = 2 : ncols] {
    stats in using 'tokens':i nooutput
    top_b[i] = STATS_max_y
    top_t[i] = STATS_max_x
}

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set title sprintf("KV-cache size of real models (%s, batch 1)", dtype)
    set xlabel 'tokens in the cache'
    set ylabel sprintf('KV cache (GiB, %s)', dtype)
    set xrange [0 : Tmax]
    set yrange [0 : *]
    set xtics 512
    set format y '%.2f'
    set key top left Left reverse
    if (dtype eq 'fp16' && Tmax >= 2048) {
        # the label right of the arrow, the arrow from its left end down to the point
        set label 1 "the article: 32 MiB (one head of 32)" at 2048 + 260, 0.30 left font ',23' textcolor rgb '#333333'
        set arrow 1 from 2048 + 240, 0.30 to 2048 + 30, 33554432 / GiB + 0.03 linecolor rgb '#333333' linewidth 2 size screen 0.01,25
        if (strstrt(names, 'llama-2-7b') > 0) {
            set label 2 "← 1 GiB at 2048 tokens (all 32 heads)" at 2048 + 70, 0.97 left font ',23' textcolor rgb '#333333'
        }
    }
    plot for [i = 2 : ncols] in using 'tokens':(keep(i) ? column(i) / GiB : NaN) with linespoints ls (i - 1) pointinterval 2 \
            title (keep(i) ? sprintf('%s: %s at %d tokens', word(names, i), human(top_b[i]), top_t[i]) : ''), \
         (dtype eq 'fp16' && Tmax >= 2048 ? '+' : NaN) using (2048):(33554432 / GiB) every ::0::0 with points ls 7 pointsize 2.2 notitle
    set output
}
evaluate publish(out)
