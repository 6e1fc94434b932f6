reset
# loss.gp — attention sinks, StreamingLLM's figure: the loss of every token of a text
# against its position, from `kvscope loss`, three ways: the full KV cache, a window of W
# tokens that keeps the first S positions (the sinks), and a window of the same W that
# evicts them. Each line is the mean over blocks of 8 positions (one token's loss is
# noisy); the dashed line marks W, where the windows start to evict.
# Reads loss.csv (position,token_id,full_bits,sinks_bits,evict_bits) and means,
# loss_means.csv (cache,window,sinks,...,mean_bits_past_window).
# model (optional) names the model in the title.
# Writes out.png (1600x900) and out.svg. By hand, from the repository root:
#   gnuplot -e "in='data/loss/loss.csv'; means='data/loss/loss_means.csv'; out='/tmp/loss'" plots/loss.gp
load (exists('scripts') ? scripts : 'plots').'/style.gp'  # scripts: this folder, set by kvscope
evaluate need_vars('in means out')
evaluate need_columns(in, 'position full_bits sinks_bits evict_bits')
evaluate need_columns(means, 'cache window sinks mean_bits_past_window')
# W, S and the three means past the window (rows full, sinks, evict) for the legend
field(row, col) = system(sprintf("awk -F, 'NR == %d { printf \"%%s\", $%d }' '%s'", row + 1, col, means))
W = int(field(2, 2))
S = int(field(2, 3))
past(row) = (v = field(row, 7), v eq 'nan' || v eq '-nan' ? 'none' : sprintf('%.2f', real(v)))
m_full = past(1)
m_sinks = past(2)
m_evict = past(3)
stats in using 'position' nooutput
P = int(STATS_max)
name = exists('model') ? model : 'the model'
B = 8
block(p) = floor((p - 1) / B) * B + 1 + (B - 1) / 2.0

# the y range from the block means drawn (a single token's loss can be 10 bits or more),
# with room above them for the legend
set table $blocks
plot in using (block(column('position'))):'full_bits' smooth unique, \
     in using (block(column('position'))):'sinks_bits' smooth unique, \
     in using (block(column('position'))):'evict_bits' smooth unique
unset table
set datafile separator whitespace  # the table is gnuplot's own, columns apart by spaces
stats $blocks using 2 nooutput
set datafile separator ','
YMAX = 1.5 * STATS_max

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set title sprintf("Loss at each position of a text, %s: full cache vs a %d-token window", name, W) noenhanced
    set xlabel 'position in the text (tokens)'
    set ylabel 'loss (bits per token), mean of 8 positions'
    set key top left
    set yrange [0:YMAX]
    set xrange [0:P + 1]
    set arrow 1 from W, graph 0 to W, graph 1 nohead linestyle 8
    set label 1 sprintf(' window W = %d', W) at W, graph 0.04 left textcolor rgb '#666666'
    plot in using (block(column('position'))):'full_bits' smooth unique with lines linestyle 1 \
             title sprintf('full cache (past W: %s)', m_full), \
         in using (block(column('position'))):'sinks_bits' smooth unique with lines linestyle 3 \
             title sprintf('window keeping %s (past W: %s)', S == 1 ? 'position 0, the sink' : sprintf('positions 0-%d, the sinks', S - 1), m_sinks), \
         in using (block(column('position'))):'evict_bits' smooth unique with lines linestyle 2 \
             title sprintf('window of the same W evicting %s (past W: %s)', S == 1 ? 'it' : 'them', m_evict)
    set output
}
evaluate publish(out)
