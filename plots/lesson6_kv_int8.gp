reset
# lesson6_kv_int8.gp — what int8 does to the logits when K and V are grouped per token or
# per channel: four bars, one per combination (K per token or per channel × V per token or
# per channel), the largest |Δlogit| against the fp32 cache on the left, the RMS of Δlogit
# on the right, both over every logit of every position of a text. The bar of KIVI's
# choice (K per channel, V per token) is drawn in a second colour and named under the chart.
# Reads groups.csv written by `kvscope kvvalues` (columns k_group, v_group, positions,
# max_abs_dlogit, rms_dlogit).
# By hand, from the repository root:
#   gnuplot -e "in='data/lesson6/kv/groups.csv'; out='/tmp/kv_int8'" plots/lesson6_kv_int8.gp
load 'plots/style.gp'
evaluate need_vars('in out')
evaluate need_columns(in, 'k_group v_group positions max_abs_dlogit rms_dlogit')
stats in using 'max_abs_dlogit' nooutput
mmax = STATS_max
stats in using 'rms_dlogit' nooutput
rmax = STATS_max
stats in using 'positions' nooutput
npos = STATS_max
ab(g) = g eq 'channel' ? 'ch' : g eq 'token' ? 'tok' : g
lab(k, v) = sprintf("K: %s\nV: %s", ab(k), ab(v))
kivi(k, v) = k eq 'channel' && v eq 'token'

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set multiplot layout 1,2 title sprintf('int8 K and V, grouped per token or per channel: logit error against fp32 over %d positions', npos) font ',23'
    set xrange [-0.6 : 3.6]
    set xtics scale 0 font ',23'
    set grid noxtics ytics
    set style fill solid 0.85 border rgb '#444444'
    set boxwidth 0.6
    set bmargin 7
    set xtics font ',23'
    unset xlabel
    set label 4 'each int8 scale covers one token and head (tok) or one channel (ch)' at screen 0.5, 0.11 center font ',23' textcolor rgb '#333333'
    unset key
    set label 3 'orange: KIVI (2024) groups keys per channel and values per token' at screen 0.5, 0.045 center font ',23' textcolor rgb '#333333'
    set title 'largest |Δlogit|' font ',23'
    set ylabel 'max |Δlogit| (logit units)'
    set yrange [0 : mmax * 1.2]
    plot in using 0:'max_abs_dlogit':(kivi(strcol('k_group'), strcol('v_group')) ? 0xE69F00 : 0x0072B2):xticlabels(lab(strcol('k_group'), strcol('v_group'))) with boxes lc rgb variable, \
         in using 0:'max_abs_dlogit':(sprintf('%.3g', column('max_abs_dlogit'))) with labels offset 0,0.9 font ',23'
    unset label 3
    unset label 4
    set title 'RMS of Δlogit' font ',23'
    set ylabel 'RMS Δlogit (logit units)'
    set yrange [0 : rmax * 1.2]
    plot in using 0:'rms_dlogit':(kivi(strcol('k_group'), strcol('v_group')) ? 0xE69F00 : 0x0072B2):xticlabels(lab(strcol('k_group'), strcol('v_group'))) with boxes lc rgb variable, \
         in using 0:'rms_dlogit':(sprintf('%.3g', column('rms_dlogit'))) with labels offset 0,0.9 font ',23'
    unset multiplot
    set output
}
evaluate publish(out)
