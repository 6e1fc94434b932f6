reset
# lesson6_kv_channels.gp — what the KV cache holds, channel by channel: one panel per layer
# (rows) for K (left) and V (right); on x every channel 0 .. C−1, on y its values over the
# positions of a text: a box from the lower to the upper quartile, whiskers from min to
# max, the median a dark tick. Thin grey lines part the heads (hs channels each). The two
# panels of a layer share one y range, so K and V can be compared; an outlier channel is a
# whisker that reaches far past its neighbours'.
# Reads channels.csv written by `kvscope kvvalues` (columns layer, kv, channel, min, q1,
# median, q3, max, absmax); L layers, hs the head size, npos the positions measured.
# By hand, from the repository root:
#   gnuplot -e "in='data/lesson6/kv/channels.csv'; L=4; hs=32; npos=256; out='/tmp/kv_channels'" plots/lesson6_kv_channels.gp
load 'plots/style.gp'
evaluate need_vars('in L hs npos out')
evaluate need_columns(in, 'layer kv channel min q1 median q3 max absmax')
stats in using 'channel' nooutput
C = STATS_max + 1
is(l, k) = column('layer') == l && strcol('kv') eq k
# One y range per layer: the larger max |x| of its K and V, rounded up.
array lim[L]
do for [l = 0 : L - 1] {
    stats in using (column('layer') == l ? column('absmax') : NaN) nooutput
    lim[l + 1] = STATS_max * 1.08
}
# Panels placed in screen coordinates: rows from top to bottom, the x labels below.
top = 0.87
bottom = 0.115
gap = 0.025
ph = (top - bottom - (L - 1) * gap) / L
ystep(m) = m >= 12 ? 5 : (m >= 6 ? 3 : (m >= 3 ? 2 : (m >= 1.5 ? 1 : 0.5)))

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set multiplot title sprintf('K and V of the shipped byte-level model, channel by channel, over %d positions of a text', npos) font ',22'
    set label 2 "each channel's values (activations, no unit): box = middle half (quartiles), whiskers = min to max, black tick = median" at screen 0.5, 0.905 center font ',17' textcolor rgb '#333333'
    set style fill solid 0.9 noborder
    set boxwidth 0.75
    set xrange [-1 : C]
    set xtics 0, hs, C - 1 font ',16'
    set grid xtics noytics linecolor rgb '#b0b0b0'
    set ytics font ',16'
    unset key
    do for [l = 0 : L - 1] {
        do for [k = 1 : 2] {
            kv = k == 1 ? 'K' : 'V'
            set lmargin at screen (k == 1 ? 0.075 : 0.555)
            set rmargin at screen (k == 1 ? 0.485 : 0.965)
            set tmargin at screen top - l * (ph + gap)
            set bmargin at screen top - l * (ph + gap) - ph
            set format x (l == L - 1 ? '%g' : '')
            if (l == L - 1) { set xlabel sprintf('channel of %s (heads of %d channels)', k == 1 ? 'K, the keys' : 'V, the values', hs) font ',18' offset 0,0.4 } else { unset xlabel }
            set ylabel (k == 1 ? sprintf('layer %d', l) : '') font ',18' offset 1,0
            set yrange [-lim[l + 1] : lim[l + 1]]
            set ytics ystep(lim[l + 1])
            plot in using (is(l, kv) ? column('channel') : NaN):'q1':'min':'max':'q3' with candlesticks whiskerbars 0 lc rgb '#56B4E9' lw 0.8, \
                 in using (is(l, kv) ? column('channel') : NaN):'q1':'q1':'q3':'q3' with candlesticks lc rgb '#0072B2' fs solid 1.0, \
                 in using (is(l, kv) ? column('channel') : NaN):'median':'median':'median':'median' with candlesticks lc rgb '#000000' lw 1.2
            unset label 2
        }
    }
    unset multiplot
    set output
}
evaluate publish(out)
