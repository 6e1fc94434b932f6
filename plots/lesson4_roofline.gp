reset
# lesson4_roofline.gp — batched decode on the roofline. Left: a decode step's FLOPs per
# byte read (counted by the step) against the FLOP/s it reached (measured), one point per
# batch size B, under this machine's roof: min(FMA peak, memory bandwidth × FLOPs per
# byte), both measured on the same machine. Where the two roofs meet (the ridge), decode
# stops being bound by memory. Right: against B, the time of one step (what each
# sequence waits per token) and that time over B (what one generated token costs).
# Reads roofline.csv from `kvscope batch --roofline B` (columns B, flops_per_byte,
# gflops_s, ttft_s, step_s); variables peak (GFLOP/s) and bw (GB/s), e.g. from
# tests/bench's `bench_kvscope peak` and `bench_kvscope triad` (read_gbs). The machine is
# named in the lesson's caption, not here.
# By hand, from the repository root:
#   bin/kvscope batch --roofline 64 --steps 16 --out /tmp/rf
#   gnuplot -e "in='/tmp/rf/roofline.csv'; peak=40; bw=7; out='/tmp/roofline'" plots/lesson4_roofline.gp
load 'plots/style.gp'
evaluate need_vars('in peak bw out')
evaluate need_columns(in, 'B flops_per_byte gflops_s ttft_s step_s')
if (peak <= 0 || bw <= 0) { exit error sprintf('lesson4_roofline: peak and bw must be positive (%g, %g)', peak, bw) }
ridge = peak / bw               # FLOPs per byte where the roofs meet
roof(x) = x * bw < peak ? x * bw : peak
stats in using 'flops_per_byte' nooutput
imin = STATS_min; imax = STATS_max
stats in using 'B' nooutput
bmax = STATS_max
xlo = 10 ** floor(log10(imin < ridge ? imin : ridge) - 0.3)
xhi = 10 ** ceil(log10((imax > ridge ? imax : ridge) * 2))

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set multiplot title "Batched decode of GPT-2 small on the roofline, one thread" font ',24'
    # ---- left: the roofline ----
    set origin 0, 0
    set size 0.58, 0.90
    set lmargin 11; set rmargin 2; set tmargin 2; set bmargin 4
    set logscale xy
    set xrange [xlo : xhi]
    set yrange [peak / 1000.0 : peak * 3]
    set format x '%g'
    set format y '%g'
    set xlabel 'FLOPs per byte read (counted)' font ',23'
    set ylabel 'GFLOP/s reached (measured)' font ',23'
    set key bottom right Left reverse font ',23' samplen 2 opaque
    set arrow 1 from ridge, peak / 1000.0 to ridge, peak nohead lc rgb '#999999' dt 2 lw 2
    set label 1 sprintf("ridge: %.1f FLOPs/byte", ridge) at ridge / 1.15, peak * 1.7 right font ',23' textcolor rgb '#555555'
    set label 2 "memory-bound ←" at ridge / 1.15, peak / 60.0 right font ',23' textcolor rgb '#555555'
    set label 3 "→ compute-bound" at ridge * 1.15, peak / 60.0 left font ',23' textcolor rgb '#555555'
    plot roof(x) with lines lw 4 lc rgb '#000000' title sprintf('roof: %.0f GFLOP/s peak, %.1f GB/s', peak, bw), \
         in using 'flops_per_byte':'gflops_s' with linespoints ls 1 title 'one decode step of B sequences', \
         in using 'flops_per_byte':(int(log(column('B')) / log(2) + 0.5) % 2 == 0 ? column('gflops_s') : NaN):(sprintf('B=%d', column('B'))) with labels offset char 0, -1.4 font ',23' textcolor rgb '#0072B2' notitle, \
         in using 'flops_per_byte':(int(log(column('B')) / log(2) + 0.5) % 2 == 1 ? column('gflops_s') : NaN):(sprintf('B=%d', column('B'))) with labels offset char 0, 1.4 font ',23' textcolor rgb '#0072B2' notitle
    unset arrow; unset label
    # ---- right: time to first token and per output token ----
    set origin 0.58, 0
    set size 0.42, 0.90
    set lmargin 10; set rmargin 2
    set logscale x 2
    set logscale y
    set xrange [0.7 : bmax * 1.4]
    set format x '%g'
    set xlabel 'batch size B' font ',23'
    set ylabel 'ms (measured)' font ',23'
    set key top left Left reverse font ',23' samplen 2 opaque
    set autoscale y
    set offsets 0, 0, graph 0.6, 0   # room above the lines for the key
    plot in using 'B':(1e3 * column('step_s')) with linespoints ls 1 title 'one step', \
         in using 'B':(1e3 * column('step_s') / column('B')) with linespoints ls 3 title 'per token (step ÷ B)'
    unset multiplot
    set output
}
evaluate publish(out)
