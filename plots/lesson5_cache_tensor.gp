reset
# lesson5_cache_tensor.gp — the KV cache as the tensor every memory formula counts:
# L layers × {K, V} × NH heads × T positions × hs numbers. One layer is drawn: a row per
# head in K and in V, positions along x; the slots holding tokens, the slots reserved
# but empty (the cache grows by doubling), and the one position a decode step writes
# (in every head of K and V, in every layer). Every number is counted by kvscope for
# this run (kvscope info, kv_memory.csv), none measured.
# Variables: L, NH, hs (the model), T (tokens in the cache after the last step),
# cap (positions reserved), eb (bytes per element: 4 for float32).
# By hand, from the repository root:
#   gnuplot -e "L=1; NH=12; hs=64; T=215; cap=256; eb=4; out='/tmp/tensor'" plots/lesson5_cache_tensor.gp
load 'plots/style.gp'
evaluate need_vars('L NH hs T cap eb out')
if (T < 1 || cap < T || NH < 1 || L < 1) { exit error sprintf('lesson5_cache_tensor: need 1 <= T <= cap and NH, L >= 1 (T=%d cap=%d)', T, cap) }

per = 2.0 * L * NH * hs * eb             # bytes per token
group(n) = n < 1000 ? sprintf('%d', int(n)) : group(int(n / 1000)) . sprintf(',%03d', int(n) % 1000)   # 1,320,960
# rows: V heads at 0 .. NH-1, a gap, K heads at NH+1 .. 2NH
yk(h) = 2 * NH - h
yv(h) = NH - 1 - h
BLUE = '#0072B2'; ORANGE = '#E69F00'

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set title sprintf("The KV cache as a tensor: L × \\{K, V\\} × NH heads × T positions × hs numbers\n{/*0.75 this run: %d × 2 × %d × %d × %d × %d B = %s B held; %d positions reserved}", \
        L, NH, T, hs, eb, group(per * T), cap)
    set xlabel 'position in the cache (token)'
    set xrange [-0.5 : cap + 0.5]
    set yrange [-1 : 2 * NH + 1]
    unset ytics
    set grid noytics
    set xtics out nomirror
    set border 1 linecolor rgb '#808080'
    set lmargin at screen 0.16
    set rmargin at screen 0.76
    set bmargin at screen 0.14
    set tmargin at screen 0.84
    set style rectangle fillstyle solid 1.0 noborder
    # slots holding tokens, the newest one, the reserved rest
    do for [h = 0 : NH - 1] {
        set object 10 * h + 1 rect from -0.5, yk(h) - 0.42 to T - 1.5, yk(h) + 0.42 fc rgb BLUE fs solid 0.55 noborder
        set object 10 * h + 2 rect from T - 1.5, yk(h) - 0.42 to T - 0.5, yk(h) + 0.42 fc rgb ORANGE fs solid 1.0 noborder
        set object 10 * h + 3 rect from T - 0.5, yk(h) - 0.42 to cap - 0.5, yk(h) + 0.42 fs empty border lc rgb '#999999' dt 2
        set object 10 * h + 4 rect from -0.5, yv(h) - 0.42 to T - 1.5, yv(h) + 0.42 fc rgb BLUE fs solid 0.55 noborder
        set object 10 * h + 5 rect from T - 1.5, yv(h) - 0.42 to T - 0.5, yv(h) + 0.42 fc rgb ORANGE fs solid 1.0 noborder
        set object 10 * h + 6 rect from T - 0.5, yv(h) - 0.42 to cap - 0.5, yv(h) + 0.42 fs empty border lc rgb '#999999' dt 2
    }
    # the written position framed, so one position of many stays visible
    set object 1000 rect from T - 1.5, -0.7 to T - 0.5, 2 * NH + 0.7 fs empty border lc rgb ORANGE lw 3 front
    # the axes of the tensor, left of the rows
    set label 1 'K' at screen 0.035, first yk((NH - 1) / 2.0) center font ',30'
    set label 2 'V' at screen 0.035, first yv((NH - 1) / 2.0) center font ',30'
    set label 3 'head 0' at -0.5 - cap * 0.01, yk(0) right font ',23'
    set label 4 sprintf('head %d', NH - 1) at -0.5 - cap * 0.01, yk(NH - 1) right font ',23'
    set label 5 'head 0' at -0.5 - cap * 0.01, yv(0) right font ',23'
    set label 6 sprintf('head %d', NH - 1) at -0.5 - cap * 0.01, yv(NH - 1) right font ',23'
    set label 7 sprintf("layer 0 of %d%s", L, L > 1 ? "\n(each layer the same)" : '') at screen 0.02, screen 0.08 left font ',23'
    # what the decode step writes, in words, right of the plot
    set label 8 sprintf("{/:Bold one decode step} writes\nposition %d only:\n%d numbers per head\nin K and in V,\n%s\n= %s B per token", \
        T - 1, hs, L > 1 ? sprintf('in each of %d layers', L) : 'in its one layer', group(per)) at screen 0.78, screen 0.62 left font ',23' textcolor rgb '#333333'
    set arrow 1 from screen 0.775, screen 0.64 to T - 0.5, yk(0) + 0.6 linecolor rgb '#333333' linewidth 2 size screen 0.012,25
    set label 9 sprintf("each row: one head,\n%d numbers (hs)\nper position", hs) at screen 0.78, screen 0.25 left font ',23' textcolor rgb '#333333'
    set key at screen 0.765, screen 0.84 left top Left reverse samplen 1.5 spacing 1.1
    plot NaN with boxes fs solid 0.55 fc rgb BLUE title 'holds a token', \
         NaN with boxes fs solid 1.0 fc rgb ORANGE title 'the last step wrote', \
         NaN with boxes fs empty lc rgb '#999999' dt 2 title 'reserved, empty'
    set output
}
evaluate publish(out)
