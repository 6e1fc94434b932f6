reset
# lesson2_cache_layers.gp — the KV cache right after the prefill as the tensor it is,
# L × 2 × heads × T × hs, drawn from the run's shapes with every layer: one column per layer,
# K above V, a band per head, T positions across (each band holds T × hs numbers). The
# slot the next decode step appends in every band is orange: one position in every layer,
# K and V, head — the bytes per token.
# Variables: L layers, NH heads, T positions held, hs the head size, eb bytes per number.
# By hand, from the repository root:
#   gnuplot -e "L=4; NH=6; T=60; hs=32; eb=4; out='/tmp/cache_layers'" plots/lesson2_cache_layers.gp
load 'plots/style.gp'
evaluate need_vars('L NH T hs eb out')
if (L < 1 || NH < 1 || T < 1 || hs < 1) { exit error sprintf('lesson2_cache_layers: need L, NH, T, hs >= 1 (L=%d NH=%d T=%d hs=%d)', L, NH, T, hs) }
BLUE = '#0072B2'; ORANGE = '#E69F00'
group(n) = n < 1000 ? sprintf('%d', int(n)) : group(int(n / 1000)) . sprintf(',%03d', int(n) % 1000)
H = 900 * 0.90                   # the drawing's height (under the title)
left = 190.0; right = 40.0; gap = 36.0
cw = (1600 - left - right - (L - 1) * gap) / L        # a layer's column
u = floor(cw / (T + 1.0)); u = u < 1 ? 1 : u           # px per position (T and the next one)
top = 120.0; bot = H - 130
bh = (bot - top - 60) / (2.0 * NH)                     # a head's band
yk(h) = top + h * bh
yv(h) = top + NH * bh + 60 + h * bh
xl(l) = left + l * (cw + gap)

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set label 99 sprintf("The KV cache after the prefill: %d × 2 × %d × %d × %d = %s numbers = %s B (%d B each)", L, NH, T, hs, group(2 * L * NH * T * hs), group(2 * L * NH * T * hs * eb), eb) at screen 0.5, screen 0.955 center font ',24'
    set label 98 sprintf("L × 2 × heads × T × hs; the next decode step appends one position (orange) to each: %s B a token", group(2 * L * NH * hs * eb)) at screen 0.5, screen 0.905 center font ',23' textcolor rgb '#333333'
    set lmargin at screen 0; set rmargin at screen 1; set tmargin at screen 0.90; set bmargin at screen 0
    set xrange [0 : 1600]; set yrange [H : 0]
    unset border; unset tics; unset grid; unset key
    set style rectangle fillstyle solid 1.0 noborder
    n = 0
    do for [l = 0 : L - 1] {
        do for [h = 0 : NH - 1] {
            n = n + 1; set object n rect from xl(l), yk(h) + 2 to xl(l) + T * u, yk(h) + bh - 2 fc rgb BLUE fs solid 0.55
            n = n + 1; set object n rect from xl(l) + T * u, yk(h) + 2 to xl(l) + (T + 1) * u, yk(h) + bh - 2 fc rgb ORANGE
            n = n + 1; set object n rect from xl(l), yv(h) + 2 to xl(l) + T * u, yv(h) + bh - 2 fc rgb BLUE fs solid 0.55
            n = n + 1; set object n rect from xl(l) + T * u, yv(h) + 2 to xl(l) + (T + 1) * u, yv(h) + bh - 2 fc rgb ORANGE
        }
        set label 10 + l sprintf('layer %d', l) at xl(l) + T * u / 2.0, top - 24 center font ',23'
        set label 20 + l sprintf('%d positions', T) at xl(l) + T * u / 2.0, bot + 14 center font ',23' textcolor rgb '#444444'
    }
    set label 1 'K' at 40, yk(NH / 2.0) center font ',30'
    set label 2 'V' at 40, yv(NH / 2.0) center font ',30'
    set label 3 'head 0' at left - 10, yk(0) + bh / 2.0 right font ',23'
    set label 4 sprintf('head %d', NH - 1) at left - 10, yk(NH - 1) + bh / 2.0 right font ',23'
    set label 5 'head 0' at left - 10, yv(0) + bh / 2.0 right font ',23'
    set label 6 sprintf('head %d', NH - 1) at left - 10, yv(NH - 1) + bh / 2.0 right font ',23'
    set label 7 sprintf("each band: one head's %d positions × %d numbers (hs)", T, hs) at 800, bot + 62 center font ',23'
    plot NaN notitle
    set output
}
evaluate publish(out)
