reset
# heatmap.gp — one attention heatmap for slides: the weights (or the scaled scores) of one
# layer and head, with the token texts on both axes and a colour bar with its range.
#   step = 0   the prefill: the T×T square of the prompt;
#   step = s   the staircase after decode step s: the prefill square plus one row per step.
# Reads attention.csv (phase,step,layer,head,query_pos,key_pos,score,weight) and tokens.csv
# (step,pos,token_id,text) written by `kvscope run` into its --out folder.
# Rows are query positions, columns key positions (key_pos: the position a cache slot holds).
# Future (masked) cells are not in the CSV and show as the grey background. A run that
# evicted keys (--window/--sink, --article-bug) leaves causal cells out of the CSV too:
# those show white with a black hatch, named in the key and the title.
# Writes out.png (1600x900) and out.svg. By hand, from the repository root:
#   gnuplot -e "dir='kvscope_out'; step=3; layer=0; head=0; value='weight'; out='/tmp/stair'" plots/heatmap.gp
# value: 'weight' (viridis, 0..1) or 'score' (cool-warm, ±range; range=R fixes it,
# default: the largest |score| drawn).
if (!exists("dir")) dir = 'kvscope_out'
if (!exists("step")) step = 0
if (!exists("layer")) layer = 0
if (!exists("head")) head = 0
if (!exists("value")) value = 'weight'
if (!exists("out")) out = sprintf('%s/heatmap_s%03d_L%d_H%02d_%s', dir, step, layer, head, value)
load 'plots/style.gp'
att = dir.'/attention.csv'
tok = dir.'/tokens.csv'
evaluate need_columns(att, 'phase step layer head query_pos key_pos score weight')
evaluate need_columns(tok, 'step pos token_id text')
if (value ne 'weight' && value ne 'score') exit error "value must be 'weight' or 'score'"

# the rows drawn: this layer and head, from the prefill up to `step`
keep(c) = (column('layer') == layer && column('head') == head && column('step') <= step)
zcol = value eq 'weight' ? 'weight' : 'score'
stats att using (keep(0) ? column('query_pos') : NaN):(keep(0) ? column(zcol) : NaN) nooutput
if (!exists("STATS_records") || STATS_records == 0) \
    exit error sprintf("no rows for layer %d head %d up to step %d in %s", layer, head, step, att)
n = int(STATS_max_x) + 1
rows_seen = STATS_records  # a full cache gives every causal cell: n(n+1)/2 of them (more without a cache)
zmax = STATS_max_y > -STATS_min_y ? STATS_max_y : -STATS_min_y
if (!exists("range")) range = zmax > 0 ? zmax : 1
stats tok using (column('step') == 0 ? 1 : NaN) nooutput
T0 = STATS_records  # prompt length: the rows above the line come from the prefill
evicted = rows_seen < n * (n + 1) / 2  # some key position was not in the cache for its row

# token texts: spaces made visible, escapes of enhanced text avoided with noenhanced
vis(s) = strstrt(s, ' ') == 0 ? s : s[1:strstrt(s, ' ') - 1].'␣'.vis(s[strstrt(s, ' ') + 1:])
label(s) = strlen(s) == 0 ? '␣' : vis(s)  # gnuplot may read a lone space as empty

phase_txt = step == 0 ? 'prefill' : sprintf('prefill + %d decode step%s', step, step == 1 ? '' : 's')
set title sprintf('%s, layer %d, head %d: %s%s', phase_txt, layer, head, \
    value eq 'weight' ? 'attention weights (after softmax)' : 'attention scores q·k/√hs (before softmax)', \
    evicted ? "\nhatched: key evicted from the cache when the row was computed" : '') noenhanced
set xlabel evicted ? 'key: token position' : 'key: cached token (slot)'
set ylabel 'query: token being computed'
set xrange [-0.5:n - 0.5]
set yrange [n - 0.5:-0.5]
set size ratio -1
set xtics 1 noenhanced rotate by 60 right scale 0 font ',23'
set ytics 1 noenhanced scale 0 font ',23'
set grid noxtics noytics nomxtics nomytics
set border 0
set key top right opaque font ',23'
if (step == 0) unset key
set object 1 rectangle from graph 0, graph 0 to graph 1, graph 1 behind fillcolor rgb '#808080' fillstyle solid 1.0 noborder
if (evicted) {
    # the causal staircase (key ≤ query) hatched; the cells in the CSV are drawn over it
    poly = 'set object 2 polygon from -0.5, -0.5'
    do for [q = 0:n - 1] { poly = poly.sprintf(' to %g, %g to %g, %g', q + 0.5, q - 0.5, q + 0.5, q + 0.5) }
    poly = poly.sprintf(' to -0.5, %g to -0.5, -0.5', n - 0.5)
    eval poly
    set object 2 behind fillcolor rgb '#000000' fillstyle pattern 4 noborder
    if (step == 0) { set key }
}
if (value eq 'weight') {
    # viridis in 9 stops: src/observe/colormap.c's table at 0, 1/8, ..., 1
    set palette defined (0 '#440154', 1 '#472d7b', 2 '#3b528b', 3 '#2c728e', 4 '#21918c', \
                         5 '#27ad81', 6 '#5cc863', 7 '#aadc32', 8 '#fde725')
    set cbrange [0:1]
    set cblabel 'weight (0 to 1)'
} else {
    # Moreland's cool-warm in 7 stops: src/observe/colormap.c's table at 0, 1/6, ..., 1
    set palette defined (0 '#3b4cc0', 1 '#7092f3', 2 '#abc7fd', 3 '#dddddd', 4 '#f7b89d', \
                         5 '#e7755b', 6 '#b40426')
    set cbrange [-range:range]
    set cblabel sprintf('score (clipped to ±%.3g)', range)
}
if (step > 0) {
    set arrow 1 from graph 0, first T0 - 0.5 to graph 1, first T0 - 0.5 nohead front \
        linecolor rgb '#E69F00' linewidth 3 dashtype 2
}
set colorbox vertical user origin graph 1.04, graph 0 size character 2, graph 1
set cbtics font ',23'

clip(z) = z < -range ? -range : (z > range ? range : z)
# the key entry of the hatch, only when something was evicted (a plot element of its
# own would change the output of every other run)
evicted_key = evicted ? ", NaN with boxes fillcolor rgb '#000000' fillstyle pattern 4 title 'evicted: not in the cache'" : ''
do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    plot att using (keep(0) ? column('key_pos') : NaN):(column('query_pos')):(0.5):(0.5):(clip(column(zcol))) \
             with boxxyerror fillcolor palette z fillstyle solid 1.0 noborder notitle, \
         (step > 0 ? NaN : 1/0) with lines linecolor rgb '#E69F00' linewidth 3 dashtype 2 \
             title (step > 0 ? sprintf('below: rows of decode steps 1..%d', step) : ''), \
         tok using (column('pos')):(NaN):xticlabels(label(strcol('text'))) notitle, \
         tok using (NaN):(column('pos')):yticlabels(label(strcol('text'))) notitle @evicted_key
    set output
}
evaluate publish(out)
