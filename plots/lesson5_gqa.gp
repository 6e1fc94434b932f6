reset
# lesson5_gqa.gp — grouped-query and multi-query attention. Left: query heads and the
# K/V heads they read, drawn for 8 query heads (MHA: 8 K/V heads; GQA: 2, four queries
# sharing each, as Llama-3-8B's 32 : 8; MQA: 1). Right: the KV bytes of real GQA models
# (fp16) against the tokens held by a whole batch (batch × context), next to what an 80 GB
# GPU has left for them once Llama-3-8B's fp16 weights are loaded; LLaMA-2-7B, the same shape as Llama-3-8B with all 32 heads keeping K
# and V, for comparison. Arithmetic, not a run: bytes = 2 · L · kv_heads · hs · tokens ·
# 2 bytes, with the published configs (kvscope kvmem's presets, sources in src/serve/kvmem.h).
# Reads kvmem.csv from `kvscope kvmem --out DIR` (columns tokens, llama-2-7b,
# llama-3-8b, mistral-7b, qwen2-7b: bytes at each length, from which bytes per token).
# By hand, from the repository root:
#   bin/kvscope kvmem --out /tmp/gqa
#   gnuplot -e "in='/tmp/gqa/kvmem.csv'; out='/tmp/gqa_fig'" plots/lesson5_gqa.gp
load 'plots/style.gp'
evaluate need_vars('in out')
evaluate need_columns(in, 'tokens llama-2-7b llama-3-8b mistral-7b qwen2-7b')

# bytes per token of a model: its bytes over the tokens at the first length above 0
per(name) = real(system(sprintf("awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } $1 > 0 && $c[\"%s\"] != \"\" { print $c[\"%s\"] / $1; exit }' '%s'", name, name, in)))
p_l2 = per('llama-2-7b'); p_l3 = per('llama-3-8b'); p_mi = per('mistral-7b'); p_qw = per('qwen2-7b')
if (p_l2 <= 0 || p_l3 <= 0 || p_mi <= 0 || p_qw <= 0) { exit error sprintf('%s: a model has no bytes per token (no length above 0)', in) }
GPU = 80e9                      # bytes of an 80 GB GPU (A100 / H100 80 GB)
# Llama-3-8B's parameters from its config.json (hidden 4096, intermediate 14336, vocab
# 128256, 32 layers, 32 heads of 128, 8 KV heads; embeddings and lm_head not tied):
# 8,030,261,248, 2 bytes each in fp16. The cache gets what the weights leave.
l3_C = 4096.0; l3_I = 14336.0; l3_V = 128256.0; l3_L = 32; l3_KV = 8 * 128.0
l3_params = 2 * l3_V * l3_C + l3_L * (2 * l3_C * l3_C + 2 * l3_C * l3_KV + 3 * l3_C * l3_I + 2 * l3_C) + l3_C
W_l3 = 2 * l3_params
ROOM = GPU - W_l3
GiB = 1024.0 ** 3
kib(b) = sprintf('%.0f KiB', b / 1024)
cross(p) = ROOM / p             # tokens at which the cache fills what the weights leave
BLUE = '#0072B2'; ORANGE = '#E69F00'

# one row of the drawing at height y: nq query heads over nkv K/V heads, each K/V
# head read by nq / nkv queries; objects numbered from o
array qx[8]
do for [i = 1 : 8] { qx[i] = 0.06 + (i - 1) * 0.11 }

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set multiplot title "Grouped-query attention: query heads share K/V heads, and the cache shrinks with them" font ',24'
    # ---- left: the drawing, in the panel's own 0..1 coordinates ----
    set origin 0, 0
    set size 0.40, 0.90
    set xrange [0 : 0.92]
    set yrange [0 : 1]
    unset xtics; unset ytics; unset border; unset grid; unset key
    set lmargin 2; set rmargin 1; set tmargin 2; set bmargin 4
    set style rectangle fillstyle solid 1.0 border lc rgb '#333333'
    n = 0
    do for [row = 1 : 3] {
        nkv = row == 1 ? 8 : row == 2 ? 2 : 1
        yq = row == 1 ? 0.92 : row == 2 ? 0.53 : 0.2
        yv = yq - 0.15
        do for [i = 1 : 8] {
            n = n + 1
            set object n rect from qx[i] - 0.035, yq - 0.03 to qx[i] + 0.035, yq + 0.03 fc rgb BLUE
            j = int((i - 1) / (8 / nkv)) + 1
            kx = nkv == 8 ? qx[i] : nkv == 2 ? (qx[4 * j - 3] + qx[4 * j]) / 2 : (qx[1] + qx[8]) / 2
            set arrow n from qx[i], yq - 0.03 to kx, yv + 0.035 nohead lc rgb '#555555' lw 1.5
        }
        do for [j = 1 : nkv] {
            n = n + 1
            kx = nkv == 8 ? qx[j] : nkv == 2 ? (qx[4 * j - 3] + qx[4 * j]) / 2 : (qx[1] + qx[8]) / 2
            w = nkv == 8 ? 0.035 : 0.05
            set object n rect from kx - w, yv - 0.035 to kx + w, yv + 0.035 fc rgb ORANGE
        }
        lab = row == 1 ? "MHA: one K/V head per query head (8 drawn)" : row == 2 ? "GQA, drawn 8 : 2 (Llama-3-8B, Mistral-7B\n32 : 8; LLaMA-2-70B 64 : 8)" : "MQA: 1 K/V head for all queries"
        set label 10 + row lab at 0.0, yq + (row == 2 ? 0.14 : 0.075) left font ',23' textcolor rgb '#222222'
    }
    set label 20 "{/:Bold ■} query head     " at screen 0.02, screen 0.05 left font ',23' textcolor rgb BLUE
    set label 21 "{/:Bold ■} K/V head: what the cache keeps" at screen 0.17, screen 0.05 left font ',23' textcolor rgb '#B07800'
    plot NaN notitle
    unset object; unset arrow; unset label
    # ---- right: bytes against the tokens a batch holds ----
    set origin 0.45, 0
    set size 0.55, 0.90
    set lmargin 10; set rmargin 3; set tmargin 1; set bmargin 4
    set border 3 linecolor rgb '#808080' linewidth 1.5
    set xtics nomirror out
    set ytics nomirror out
    set mxtics; set mytics
    set grid xtics ytics mxtics mytics
    set logscale xy
    set xrange [1e3 : 1e7]
    set yrange [0.05 : 10000]
    set format x '10^{/*1.1 %T}'
    set format y '%g'
    set xlabel 'tokens held: batch × context' font ',23'
    set ylabel 'KV cache (GiB, fp16)' font ',23'
    set key top left Left reverse font ',23' spacing 1.1 samplen 2 opaque title 'KV cache per token' left
    set label 1 sprintf("80 GB GPU less %.0f GB of weights", W_l3 / 1e9) at 1.3e3, ROOM / GiB * 1.7 left font ',23' textcolor rgb '#555555'
    set label 2 sprintf("Llama-3-8B fills the rest\nat %.0fk tokens: batch %.0f\nat its 8192 context", cross(p_l3) / 1000, floor(cross(p_l3) / 8192)) \
        at 1.6e5, 0.4 left font ',23' textcolor rgb '#333333'
    set arrow 1 from cross(p_l3), 0.6 to cross(p_l3), ROOM / GiB / 1.3 lc rgb '#333333' lw 1.5 size screen 0.01,25
    set object 1 circle at cross(p_l3), ROOM / GiB size screen 0.008 fc rgb '#009E73' fs solid front
    plot x * p_l2 / GiB with lines lw 3 lc rgb '#000000' dt 2 title sprintf('LLaMA-2-7B (MHA): %s', kib(p_l2)), \
         x * p_l3 / GiB with lines lw 4 lc rgb '#009E73' title sprintf(p_mi == p_l3 ? 'Llama-3-8B, Mistral-7B: %s' : 'Llama-3-8B: %s', kib(p_l3)), \
         (p_mi == p_l3 ? NaN : x * p_mi / GiB) with lines lw 3 lc rgb '#6A3D9A' title (p_mi == p_l3 ? '' : sprintf('Mistral-7B: %s', kib(p_mi))), \
         x * p_qw / GiB with lines lw 3 lc rgb '#CC79A7' title sprintf('Qwen2-7B: %s', kib(p_qw)), \
         ROOM / GiB with lines lw 3 lc rgb '#999999' dt 3 notitle
    unset multiplot
    set output
}
evaluate publish(out)
