reset
# lesson1_decode_row.gp — a first picture of decoding with the KV cache, drawn from the run's
# shapes: three decode steps side by side. At each, one new query row q (1×hs) reads every
# row of the K cache (t×hs) — one score per cached token — and the weights mix the rows of
# the V cache (t×hs) into one output row z (1×hs). The caches grow by one row per step: the
# row the step appended in orange, the prompt's rows (from the prefill) light blue, the rows
# of earlier decode steps darker. One cell per number, one size for every cell.
# Variables: T0 the prompt's tokens, hs the head size.
# By hand, from the repository root:
#   gnuplot -e "T0=16; hs=32; out='/tmp/decode_row'" plots/lesson1_decode_row.gp
load 'plots/style.gp'
evaluate need_vars('T0 hs out')
if (T0 < 1 || hs < 1) { exit error sprintf('lesson1_decode_row: need T0, hs >= 1 (T0=%d hs=%d)', T0, hs) }
STEPS = 3
BLUE = '#0072B2'; LIGHT = '#9cc8e6'; ORANGE = '#E69F00'; GREEN = '#009E73'; GREY = '#bbbbbb'
# one cell of u px: three panels of hs + 2 (the score column) + gaps across, and the
# rows of q, K, V and z of the last step down
tmax = T0 + STEPS
LEFT = 390                     # the rows' names
u = floor(1.0 * (1600 - LEFT - 40 - 2 * 80) / (3 * (hs + 2)))
uy = floor((900.0 * 0.92 - 200) / (2 * tmax + 3))
u = u < uy ? u : uy
pw = (hs + 2) * u + 80         # a panel's width, with its gap
x0 = LEFT + (1600 - LEFT - 3 * pw + 80) / 2

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set multiplot
    set title sprintf("Decode: each step's one new query row reads K and V caches that grow by one row (prompt %d tokens, hs %d)", T0, hs) font ',23'
    set lmargin at screen 0; set rmargin at screen 1; set tmargin at screen 0.92; set bmargin at screen 0
    set xrange [0 : 1600]; set yrange [900 * 0.92 : 0]
    unset border; unset tics; unset grid; unset key
    set style rectangle fillstyle solid 1.0 noborder
    n = 0
    do for [s = 1 : STEPS] {
        t = T0 + s
        x = x0 + (s - 1) * pw
        yq = 90
        yk = yq + u + 50
        yv = yk + tmax * u + 60
        yz = yv + t * u + 40
        # q
        n = n + 1; set object n rect from x, yq to x + hs * u, yq + u fc rgb ORANGE
        # K and V: prompt rows, earlier decode rows, the new row; then the score column
        n = n + 1; set object n rect from x, yk to x + hs * u, yk + T0 * u fc rgb LIGHT
        n = n + 1; set object n rect from x, yv to x + hs * u, yv + T0 * u fc rgb LIGHT
        if (s > 1) {
            n = n + 1; set object n rect from x, yk + T0 * u to x + hs * u, yk + (t - 1) * u fc rgb BLUE
            n = n + 1; set object n rect from x, yv + T0 * u to x + hs * u, yv + (t - 1) * u fc rgb BLUE
        }
        n = n + 1; set object n rect from x, yk + (t - 1) * u to x + hs * u, yk + t * u fc rgb ORANGE
        n = n + 1; set object n rect from x, yv + (t - 1) * u to x + hs * u, yv + t * u fc rgb ORANGE
        n = n + 1; set object n rect from x + (hs + 0.8) * u, yk to x + (hs + 1.8) * u, yk + t * u fc rgb GREY
        n = n + 1; set object n rect from x + (hs + 0.8) * u, yv to x + (hs + 1.8) * u, yv + t * u fc rgb GREY
        # z
        n = n + 1; set object n rect from x, yz to x + hs * u, yz + u fc rgb GREEN
        # the empty rows the later steps will fill
        if (t < tmax) {
            n = n + 1; set object n rect from x, yk + t * u to x + hs * u, yk + tmax * u fs empty border lc rgb '#999999' dt 2
        }
        # one cell per number: thin white lines between the channels and between the rows
        do for [c = 1 : hs - 1] {
            set arrow 1000 * s + 4 * c from x + c * u, yq to x + c * u, yq + u nohead lc rgb 'white' lw 1 back
            set arrow 1000 * s + 4 * c + 1 from x + c * u, yk to x + c * u, yk + t * u nohead lc rgb 'white' lw 1 back
            set arrow 1000 * s + 4 * c + 2 from x + c * u, yv to x + c * u, yv + t * u nohead lc rgb 'white' lw 1 back
            set arrow 1000 * s + 4 * c + 3 from x + c * u, yz to x + c * u, yz + u nohead lc rgb 'white' lw 1 back
        }
        do for [r = 1 : t - 1] {
            set arrow 1000 * s + 200 + 2 * r + 0 from x, yk + r * u to x + (hs + 1.8) * u, yk + r * u nohead lc rgb 'white' lw 1 back
            set arrow 1000 * s + 200 + 2 * r + 1 from x, yv + r * u to x + (hs + 1.8) * u, yv + r * u nohead lc rgb 'white' lw 1 back
        }
        set label 10 * s + 1 sprintf('step %d: %d keys', s, t) at x + hs * u / 2.0, yq - 26 center font ',23'
        set arrow 10 * s + 2 from x + hs * u / 2.0, yv + t * u + 2 to x + hs * u / 2.0, yz - 4 lc rgb '#333333' lw 2 size screen 0.008,25
        # a plain background under the matrix's name, above the cell lines
        n = n + 1; set object n rect center x + hs * u / 2.0, yk + T0 * u / 2.0 size 150, 36 fc rgb LIGHT front
        n = n + 1; set object n rect center x + hs * u / 2.0, yv + T0 * u / 2.0 size 150, 36 fc rgb LIGHT front
        set label 10 * s + 2 sprintf('K (%d×%d)', t, hs) at x + hs * u / 2.0, yk + T0 * u / 2.0 center font ',23' textcolor rgb '#222222' front
        set label 10 * s + 3 sprintf('V (%d×%d)', t, hs) at x + hs * u / 2.0, yv + T0 * u / 2.0 center font ',23' textcolor rgb '#222222' front
        set arrow 10 * s + 1 from x + hs * u / 2.0, yq + u + 2 to x + hs * u / 2.0, yk - 4 lc rgb '#333333' lw 2 size screen 0.008,25
    }
    # the rows' names, left of the first panel
    yq = 90; yk = yq + u + 50; yv = yk + tmax * u + 60
    set label 1 sprintf("q (1×%d):\nthe new token's query", hs) at 20, yq + u / 2.0 - 8 left font ',23'
    set label 2 "K cache: a row per token;\ngrey: q·k, one score per key" at 20, yk + T0 * u / 2.0 left font ',23'
    set label 3 "orange: the row\nthis step appended" at 20, yk + T0 * u + 40 left font ',23' textcolor rgb '#b07000'
    set label 4 "V cache: the weights\n(softmax of the scores)\nmix its rows" at 20, yv + T0 * u / 2.0 left font ',23'
    set label 5 sprintf("z (1×%d): the output", hs) at 20, yv + tmax * u + 40 + u / 2.0 left font ',23' textcolor rgb '#007a5a'
    plot NaN notitle
    unset multiplot
    set output
}
evaluate publish(out)
