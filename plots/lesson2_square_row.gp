reset
# lesson2_square_row.gp — prefill against decode, for one head, drawn from the run's shapes:
# left, the prefill's T × T square of scores, every query row against every key column at
# once, the causal half computed (T(T+1)/2 scores) and the future masked; right, the first
# decode step's single row of T + 1 scores, the new token's query against the T cached keys
# and its own. One cell per score, one size for every cell.
# Variables: T the prompt's tokens.
# By hand, from the repository root:
#   gnuplot -e "T=60; out='/tmp/square_row'" plots/lesson2_square_row.gp
load 'plots/style.gp'
evaluate need_vars('T out')
if (T < 2) { exit error sprintf('lesson2_square_row: need T >= 2 (T=%d)', T) }
BLUE = '#0072B2'; LIGHT = '#9cc8e6'; ORANGE = '#E69F00'; MASK = '#c8c8c8'
top = 130.0
u = floor((900 * 0.93 - top - 150) / (T + 1.0))     # both squares, and the labels under them
u = u < 1 ? 1 : u
S = T * u
xs = 150                                            # the prefill square's left edge
xr = 1600 - 120 - (T + 1) * u                       # the decode square's left edge
group(n) = n < 1000 ? sprintf('%d', int(n)) : group(int(n / 1000)) . sprintf(',%03d', int(n) % 1000)
# the causal staircase, row i holding keys 0 .. i, as one polygon
stair = sprintf('from %g,%g', xs, top)
do for [i = 0 : T - 1] { stair = stair . sprintf(' to %g,%g to %g,%g', xs + (i + 1) * u, top + i * u, xs + (i + 1) * u, top + (i + 1) * u) }
stair = stair . sprintf(' to %g,%g to %g,%g', xs, top + S, xs, top)

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set label 99 sprintf("One head's scores: the prefill computes a %d × %d triangle at once, a decode step one row", T, T) at screen 0.5, screen 0.955 center font ',24'
    set lmargin at screen 0; set rmargin at screen 1; set tmargin at screen 0.93; set bmargin at screen 0
    set xrange [0 : 1600]; set yrange [900 * 0.93 : 0]
    unset border; unset tics; unset grid; unset key
    set style rectangle fillstyle solid 1.0 noborder
    # prefill: the causal staircase computed, the rest masked
    set object 1 rect from xs, top to xs + S, top + S fc rgb MASK
    eval 'set object 2 polygon ' . stair . ' fc rgb BLUE fs solid 0.75 noborder'
    set object 3 rect from xs, top to xs + S, top + S fs empty border lc rgb '#808080' lw 1
    set label 1 sprintf("prefill: %s scores (blue) at once,\nthe future masked (grey)", group(T * (T + 1) / 2)) \
        at xs + S / 2.0, top + S + 80 center font ',23'
    set label 2 sprintf('%d queries (the prompt)', T) at xs - 24, top + S / 2.0 center rotate by 90 font ',23'
    set label 3 sprintf('%d keys', T) at xs + S / 2.0, top + S + 30 center font ',23'
    # decode: the same square one larger, only its last row computed
    R = (T + 1) * u
    set object 4 rect from xr, top to xr + R, top + R fs empty border lc rgb '#999999' dt 2
    set object 5 rect from xr, top + R - u to xr + R, top + R fc rgb ORANGE
    set label 4 sprintf("earlier rows: not computed again\n(their K and V are cached)") at xr + R / 2.0, top + R / 2.0 center font ',23' textcolor rgb '#555555'
    set label 5 sprintf("decode step 1: %d scores,\none query row against every key", T + 1) at xr + R / 2.0, top + S + 80 center font ',23' textcolor rgb '#8a5a00'
    set label 6 sprintf('%d keys: %d cached + its own', T + 1, T) at xr + R / 2.0, top + S + 30 center font ',23'
    set arrow 1 from xr + R / 2.0, top + R / 2.0 + 60 to xr + R / 2.0, top + R - u - 4 lc rgb '#8a5a00' lw 2 size screen 0.01,25
    plot NaN notitle
    set output
}
evaluate publish(out)
