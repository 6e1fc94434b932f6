reset
# lesson6_kv_channels.gp — does the KV cache have outlier channels? For K (left) and V
# (right), every channel's largest |value| over the positions of a text, divided by the
# median channel's (of the same layer), the channels sorted from the largest: one line per
# layer, the same colour for a layer in both panels. An outlier channel is a first point far
# above the rest; the dashed line is the 4× this lesson calls an outlier.
# Reads channels.csv written by `kvscope kvvalues` (columns layer, kv, channel, absmax);
# L layers, npos the positions measured, outlier the ratio called an outlier.
# By hand, from the repository root:
#   gnuplot -e "in='data/lesson6/kv/channels.csv'; L=4; npos=256; outlier=4; out='/tmp/kv_channels'" plots/lesson6_kv_channels.gp
load 'plots/style.gp'
evaluate need_vars('in L npos outlier out')
evaluate need_columns(in, 'layer kv channel absmax')

# layer,kv,rank,ratio: each (layer, kv)'s channels sorted by absmax, over the median's
# (built by concatenation, without sprintf: gnuplot's sprintf mangles a "%%" in a long format)
sorted = "< awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } { print $c[\"layer\"] \",\" $c[\"kv\"] \",\" $c[\"absmax\"] }' '" . in . "' | sort -t, -k1,1n -k2,2 -k3,3gr | awk -F, '{ k = $1 \",\" $2; if (k != last) { flush(); last = k } v[++n] = $3; g[n] = k } END { flush() } function flush(  i, med) { if (!n) return; med = n - 2 * int(n / 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2; for (i = 1; i <= n; i++) print g[i] \",\" i \",\" v[i] / med; n = 0 }'"
stats sorted using 3:4 nooutput
C = STATS_max_x
top = STATS_max_y
is(l, k) = column(1) == l && strcol(2) eq k

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set multiplot layout 1, 2 title sprintf("Outlier channels? Each channel's largest |value| over %d positions, ÷ the median channel's", npos) font ',24'
    set xrange [0 : C + 1]
    set yrange [0 : (top > outlier ? top : outlier) * 1.15]
    set xtics font ',23'
    set ytics 1 font ',23'
    set format y '%g×'
    set key at graph 0.97, graph 0.76 right top Left reverse font ',23' title 'layer' samplen 1.5 opaque
    set ylabel 'max |value| ÷ median channel' font ',23'
    set label 1 sprintf('%g×: an outlier', outlier) at C * 0.02, outlier left offset 0, 0.7 font ',23' textcolor rgb '#555555'
    do for [k = 1 : 2] {
        kv = k == 1 ? 'K' : 'V'
        set title (k == 1 ? 'K, the keys' : 'V, the values') font ',23'
        set xlabel sprintf('%s channels, largest first (%d)', kv, C) font ',23'
        if (k == 2) { unset ylabel; unset key }
        plot for [l = 0 : L - 1] sorted using (is(l, kv) ? column(3) : NaN):4 with lines ls (l + 1) lw 4 title sprintf('%d', l), \
             outlier with lines ls 8 notitle
    }
    unset multiplot
    set output
}
evaluate publish(out)
