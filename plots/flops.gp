reset
# flops.gp — FLOPs of one decode step and of the whole generation, with the KV cache
# and without it (recomputing every token), on log-log axes. The points are what
# kvscope's engine counted; the lines join the closed form's values at the same lengths,
# which kvscope computes (src/ops.c, flops_layers_formula) and writes beside the counts:
#     per step  cache      L·(24·C² + 4·C·T)                    formula_cache
#               recompute  L·(24·T·C² + 2·C·T·(T+1))            formula_recompute
#     cumulative (prompt of P tokens, then one step per token up to T)
#               cache      L·(24·T·C² + 2·C·T·(T+1))            cum_formula_cache
#               recompute  Σ_{t=P..T} L·(24·t·C² + 2·C·t·(t+1))  cum_formula_recompute
# The script computes no FLOPs itself. The ratio of the two at the largest T (kvscope's
# column ratio, per step) is written on the chart.
# Reads compare.csv from `kvscope compare` (columns T, flops_cache, flops_recompute,
# formula_cache, formula_recompute, cum_flops_cache, cum_formula_cache,
# cum_formula_recompute, ratio, L, C, prompt_tokens).
# By hand:
#     gnuplot -e "in='data/compare/compare.csv'; out='plots/compare_flops'" plots/flops.gp
# writes plots/compare_flops.png and plots/compare_flops.svg.
load (exists('scripts') ? scripts : 'plots').'/style.gp'  # scripts: this folder, set by kvscope
evaluate need_vars('in out')
evaluate need_columns(in, 'T flops_cache flops_recompute formula_cache formula_recompute cum_flops_cache cum_formula_cache cum_formula_recompute ratio L C prompt_tokens')

stats in using 'L' nooutput
L = STATS_max
stats in using 'C' nooutput
C = STATS_max
stats in using 'prompt_tokens' nooutput
P = STATS_max
stats in using 'T' nooutput
Tmin = STATS_min
Tmax = STATS_max
# every column grows with T: its minimum is at the smallest T, its maximum at the largest
stats in using 'ratio' nooutput
ratio = STATS_max
stats in using 'formula_cache':'formula_recompute' nooutput
step_cache_min = STATS_min_x
step_cache_max = STATS_max_x
step_rec_max = STATS_max_y
stats in using 'cum_formula_cache':'cum_formula_recompute' nooutput
cum_cache_min = STATS_min_x
cum_cache_max = STATS_max_x
cum_rec_max = STATS_max_y

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set multiplot layout 1,2 title sprintf("FLOPs with and without the KV cache  (L = %d, C = %d, prompt %d token%s)", L, C, P, (P == 1 ? "" : "s")) font ',26'
    set logscale xy
    set xrange [Tmin / 1.4 : Tmax * 1.4]
    set format x '%g'
    set format y '10^{/*1.1 %T}'
    set xlabel 'sequence length T (tokens)'
    set key top left Left reverse

    set title 'one decode step'
    set ylabel 'FLOPs per step (L blocks)'
    set yrange [step_cache_min / 3 : step_rec_max * 60]
    unset label
    unset arrow
    set arrow 1 from Tmax * 1.15, step_cache_max to Tmax * 1.15, step_rec_max heads size screen 0.008,25 linecolor rgb '#333333' linewidth 2
    set label 1 sprintf("%.0f× in the blocks\nat T = %d", ratio, Tmax) at Tmax * 1.02, sqrt(step_cache_max * step_rec_max) right font ',26' textcolor rgb '#333333'
    plot in using 'T':'formula_recompute' with lines ls 2 notitle, \
         in using 'T':'flops_recompute' with points ls 2 title 'without cache (recompute T tokens)', \
         in using 'T':'formula_cache' with lines ls 1 notitle, \
         in using 'T':'flops_cache' with points ls 1 title 'with KV cache (1 new token)', \
         NaN with lines ls 8 lw 3 dt 1 linecolor rgb '#555555' title 'lines: closed form'

    set title 'cumulative, up to T'
    set yrange [cum_cache_min / 3 : cum_rec_max * 60]
    set ylabel 'FLOPs to generate up to T'
    unset arrow
    unset label
    set arrow 1 from Tmax * 1.15, cum_cache_max to Tmax * 1.15, cum_rec_max heads size screen 0.008,25 linecolor rgb '#333333' linewidth 2
    set label 1 sprintf("%.0f×\nat T = %d", cum_rec_max / cum_cache_max, Tmax) at Tmax * 1.02, sqrt(cum_cache_max * cum_rec_max) / 4 right font ',26' textcolor rgb '#333333'
    plot in using 'T':'cum_formula_recompute' with lines ls 2 notitle, \
         in using 'T':'cum_formula_recompute' with points ls 2 pointtype 4 title 'without cache (Σ of the steps)', \
         in using 'T':'cum_formula_cache' with lines ls 1 notitle, \
         in using 'T':'cum_flops_cache' with points ls 1 title 'with KV cache (counted)'
    unset multiplot
    set output
}
evaluate publish(out)
