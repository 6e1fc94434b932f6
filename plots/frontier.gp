reset
# frontier.gp — what quality each byte of KV cache buys, every lever on one chart, from
# `kvscope frontier` (frontier.csv): x the KV bytes per token of context (log), y the mean
# KL of the next-token distribution from the full fp32 cache's, in bits (log; a KL below
# 1e-6 is drawn at 1e-6). One marker and colour per lever: storage types without and with
# the Hadamard rotation, each eviction policy (its budgets joined by a line, 32 → 128),
# K/V heads mean-pooled into groups. The full cache is the dashed line (KL 0).
# By hand, from the repository root:
#   gnuplot -e "in='data/lesson9/frontier/frontier.csv'; out='/tmp/frontier'" plots/frontier.gp
load (exists('scripts') ? scripts : 'plots').'/style.gp'
evaluate need_vars('in out')
evaluate need_columns(in, 'lever label rotate policy budget bytes_per_token kl_bits')
FLOOR = 1e-6
kl(x) = x < FLOOR ? FLOOR : x
FULL = real(system(sprintf("awk -F, 'NR > 1 && $1 == \"full\" { print $8 }' '%s'", in)))
is(l) = strcol('lever') eq l
pol(p) = is('evict') && strcol('policy') eq p
# the heads lever's points, named by how many K/V heads of the full cache's they keep
heads_list = system(sprintf("awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"lever\"] == \"heads\" { printf \"%%s%%s\", s, $c[\"kv_heads\"]; s = \" / \" }' '%s' | tr -d ' ' | tr / '\\n' | sort -n | paste -sd/ | sed 's|/| / |g'", in))
heads_full = int(system(sprintf("awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"lever\"] == \"full\" { print $c[\"kv_heads\"]; exit }' '%s'", in)))
do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set title "Quality per KV byte: every lever against the full cache (trained model)" font ',23'
    set xlabel 'KV bytes per token of context (log scale)' font ',23'
    set ylabel 'mean KL from the full cache (bits, log)' font ',23'
    set logscale xy
    set xrange [600 : 8000]
    set yrange [FLOOR / 2 : 40]
    set format y '10^{/*1.15 %L}'
    set xtics font ',23'
    set ytics font ',23'
    set key at screen 0.61, screen 0.9 left top Left reverse vertical font ',23' spacing 1.1 samplen 1.5 nobox
    set rmargin at screen 0.58
    set label 2 "each policy's line: budgets\nK = 32, 64, 128 positions,\nleft to right" at screen 0.62, screen 0.3 left font ',23' textcolor rgb '#333333'
    set xtics ('700' 700, '1000' 1000, '2000' 2000, '4000' 4000, '8000' 8000)
    set arrow 1 from FULL, graph 0 to FULL, graph 1 nohead linestyle 8
    set label 1 'full fp32 cache (KL 0)' at FULL, graph 0.5 right offset -0.5, 0 font ',23' textcolor rgb '#666666'
    plot in using (is('precision') && column('rotate') == 0 ? column('bytes_per_token') : NaN):(kl(column('kl_bits'))):(strcol('label')) \
            with points pt 7 ps 2.2 lc rgb '#0072B2' title 'precision', \
         '' using (is('precision') && column('rotate') == 0 && strcol('label') ne 'q8_0' && strcol('label') ne 'fp16' ? column('bytes_per_token') : NaN):(kl(column('kl_bits'))):(strcol('label')) \
            with labels left offset 1.2, -0.6 font ',23' textcolor rgb '#0072B2' noenhanced notitle, \
         '' using (is('precision') && column('rotate') == 0 && (strcol('label') eq 'q8_0' || strcol('label') eq 'fp16') ? column('bytes_per_token') : NaN):(kl(column('kl_bits'))):(strcol('label')) \
            with labels right offset -1.2, 0.6 font ',23' textcolor rgb '#0072B2' noenhanced notitle, \
         '' using (is('precision') && column('rotate') == 1 ? column('bytes_per_token') : NaN):(kl(column('kl_bits'))) \
            with points pt 6 ps 2.6 lw 2 lc rgb '#56B4E9' title 'precision + Hadamard', \
         '' using (pol('window') ? column('bytes_per_token') : NaN):(kl(column('kl_bits'))) with linespoints ls 2 title 'window + sinks', \
         '' using (pol('h2o') ? column('bytes_per_token') : NaN):(kl(column('kl_bits'))) with linespoints ls 4 title 'H2O', \
         '' using (pol('snapkv') ? column('bytes_per_token') : NaN):(kl(column('kl_bits'))) with linespoints ls 5 title 'SnapKV', \
         '' using (pol('oracle') ? column('bytes_per_token') : NaN):(kl(column('kl_bits'))) with linespoints ls 3 title 'oracle (bound)', \
         '' using (is('heads') ? column('bytes_per_token') : NaN):(kl(column('kl_bits'))) with points pt 9 ps 2.6 lc rgb '#000000' title sprintf('%s K/V heads of %d, mean-pooled', heads_list, heads_full), \
         '' using (is('heads') ? column('bytes_per_token') : NaN):(kl(column('kl_bits'))):(sprintf('%d', column('kv_heads'))) \
            with labels left offset 1.2, 0 font ',23' noenhanced notitle
    set output
}
evaluate publish(out)
