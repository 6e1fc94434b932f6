reset
# lesson2_prefill_flops.gp — FLOPs of one prefill (all L layers) vs prompt length T, split into the
# attention itself (q·kᵀ and weights·V, grows as T²) and the projections + MLP (grow as T).
# Reads a CSV with columns T,flops_attn,flops_rest (data/lesson2/sweep/prefill_flops.csv,
# written by lessons/lesson2.sh from `kvscope run --record flops` at each T).
# Writes out.png (1600x900) and out.svg. By hand, from the repository root:
#   gnuplot -e "in='data/lesson2/sweep/prefill_flops.csv'; L=4; out='/tmp/prefill_flops'" plots/lesson2_prefill_flops.gp
load 'plots/style.gp'
evaluate need_vars('in out L')
evaluate need_columns(in, 'T flops_attn flops_rest')
stats in using 'T' nooutput
Tmin = STATS_min
Tmax = STATS_max

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set title sprintf('Prefill of all %d layers: attention grows as T², projections and MLP as T', L)
    set xlabel 'prompt length T (tokens)'
    set ylabel 'FLOPs of the prefill'
    set logscale xy
    set xrange [Tmin / 1.3 : Tmax * 1.3]
    set yrange [5e4 : 5e10]
    set xtics () 
    do for [t = Tmin : Tmax] { if (t == Tmin || (t & (t - 1)) == 0) { set xtics add (sprintf('%d', t) t) } }
    set format y '10^{/*1.1 %T}'
    set key top left Left reverse
    set label 1 'doubling T: ×4' at graph 0.66, graph 0.3 textcolor rgb '#D55E00'
    set label 2 'doubling T: ×2' at graph 0.62, graph 0.74 textcolor rgb '#0072B2'
    plot in using 'T':'flops_rest' with linespoints ls 1 title 'c\_attn + c\_proj + MLP (counted)', \
         in using 'T':'flops_attn' with linespoints ls 2 title 'attention: q·k^{/*1.1 T} and weights·V (counted)'
    set output
}
evaluate publish(out)
