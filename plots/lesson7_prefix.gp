reset
# lesson7_prefix.gp — prefix reuse: the prefill of a prompt that starts with an earlier
# one, from scratch and reusing the earlier prompt's cached K and V. Each bar is split
# into the FLOPs spent on the prefix tokens and on the new ones (which attend over the
# cached prefix either way); reuse skips the prefix part.
# Reads prefix.csv from `kvscope batch` (columns first, second, prefix_tokens,
# new_tokens, flops_fresh, flops_reuse, flops_saved_pct; the first row is drawn).
# By hand, from the repository root:
#   gnuplot -e "in='data/lesson7/paged/prefix.csv'; out='/tmp/prefix'" plots/lesson7_prefix.gp
load 'plots/style.gp'
evaluate need_vars('in out')
evaluate need_columns(in, 'first second prefix_tokens new_tokens flops_fresh flops_reuse flops_saved_pct')
stats in every ::0::0 using 'flops_fresh' nooutput
fresh = STATS_max
stats in every ::0::0 using 'flops_reuse' nooutput
reuse = STATS_max
stats in every ::0::0 using 'prefix_tokens' nooutput
np = STATS_max
stats in every ::0::0 using 'new_tokens' nooutput
nn = STATS_max
stats in every ::0::0 using 'first' nooutput
a = STATS_max + 1
stats in every ::0::0 using 'second' nooutput
b = STATS_max + 1
G = 1e9

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set title sprintf("Prefix reuse: prompt %d begins with prompt %d's %d cached tokens", b, a, np) offset -8,0
    set style fill solid 0.85 border rgb '#444444'
    set yrange [-0.5 : 2.1]
    set xrange [0 : fresh / G * 1.3]
    set ytics ('from scratch' 1, sprintf('reusing prompt %d''s cache', a) 0) scale 0 font ',23'
    set grid xtics noytics
    set xlabel sprintf('FLOPs of the prefill of prompt %d (×10^{/*1.15 9}, counted)', b)
    set key top right Left reverse
    set object 1 rect from 0, 0.7 to (fresh - reuse) / G, 1.3 fc rgb '#999999' fs solid 0.85 border rgb '#444444'
    set object 2 rect from (fresh - reuse) / G, 0.7 to fresh / G, 1.3 fc rgb '#0072B2' fs solid 0.85 border rgb '#444444'
    set object 3 rect from 0, -0.3 to reuse / G, 0.3 fc rgb '#0072B2' fs solid 0.85 border rgb '#444444'
    set label 1 sprintf('%d prefix tokens', np) at (fresh - reuse) / G / 2, 1 center font ',23' textcolor rgb '#ffffff' front
    set label 2 sprintf('%d new tokens', nn) at (fresh - (reuse) / 2) / G, 1 center font ',23' textcolor rgb '#ffffff' front
    set label 3 sprintf('%d new tokens', nn) at reuse / G / 2, 0 center font ',23' textcolor rgb '#ffffff' front
    set label 4 sprintf('%.2f', fresh / G) at fresh / G, 1 offset 1,0 left font ',23'
    set label 5 sprintf('%.2f: %s %% fewer', reuse / G, system(sprintf("awk -F, 'NR == 2 { print $8 }' '%s'", in))) at reuse / G, 0 offset 1,0 left font ',23'
    plot NaN with boxes fc rgb '#999999' title 'prefix tokens: K and V computed again', \
         NaN with boxes fc rgb '#0072B2' title 'new tokens (they attend over the prefix either way)'
    set output
}
evaluate publish(out)
