#!/bin/sh
# lesson2.sh — data and figures of lesson 2 (prefill: the whole prompt at once).
#   sh lessons/lesson2.sh BIN [--model DIR]      (what `make lesson2` runs)
# Writes data/lesson2/ (run/, sweep/, *.md, values.csv), plots/lesson2/, lessons/lesson2.md.
. lessons/lib.sh
lesson_begin 2 "$@"

PROMPT="人工智能是"
"$KV" run $MODEL_ARGS --prompt "$PROMPT" --steps 0 --record shapes,attention,kv,flops,tokens --out "$D/run" \
    --heads-shown all --plots "$P/hm" --no-gif --html "$P/explorer.html" --quiet
for f in prefill_attn_L0_H00 prefill_scores_L0_H00 prefill_step_L0_H00 prefill_heads_L0; do
    mv "$P/hm/$f.png" "$P/hm/$f.svg" "$P/"
done
rm -rf "$P/hm"
T0=$(awk -F, '$1 == "prefill" { print $3 }' "$D/run/kv_memory.csv")
figure prefill_attn_L0_H00.png "Prefill, head 0: the ${T0}×${T0} attention weights of $PROMPT — row t has t + 1 coloured cells, the grey future is masked, each row sums to 1"
figure prefill_scores_L0_H00.png "Prefill, head 0: the scores q·k/√hs before the softmax — the highest score of a row takes most of that row's weight"
figure prefill_step_L0_H00.png "Prefill, head 0, from real values: Q, K and V of all ${T0} tokens, the masked scores, their softmax and the output Z — every row of Q meets every row of K at once"
figure prefill_heads_L0.png "Prefill: the attention weights of every head of layer 0 on one colour scale — each head looks at the prompt in its own way"
V="$D/values.csv"
kv "$V" prompt "$PROMPT"

# One row of one head: scores before softmax, weights after. Query position QP
# sees keys 0..QP; later keys are masked (they do not exist yet in a causal model).
QP=4
awk -F, -v qp=$QP '
NR > 1 && $1 == "prefill" && $3 == 0 && $4 == 0 && $5 == qp {
    n++; k[n] = $6; s[n] = $7; w[n] = $8; sum += $8
}
END {
    print "| key position | score q·k/√hs | weight (softmax) |"
    print "|---|---|---|"
    for (i = 1; i <= n; i++) printf "| %d | %.4f | %.4f |\n", k[i], s[i], w[i]
    printf "| sum | | %.4f |\n", sum
}' "$D/run/attention.csv" > "$D/scores_row.md"
kv "$V" qp $QP
# Padding without a mask (one article's pad_kv_cache): a zero key scores q·0 = 0, so
# each padded slot takes e⁰ / (Σ eˢ + n·e⁰) of the weight. With the mask it takes 0.
awk -F, -v qp=$QP -v V="$V" '
NR > 1 && $1 == "prefill" && $3 == 0 && $4 == 0 && $5 == qp { z += exp($7); if ($6 == 0) w0 = $8; s0 = $7 }
END { for (n = 1; n <= 4; n *= 4) printf "pad_share_%d,%.1f\n", n, 100 * n / (z + n) >> V
      printf "w0,%.4f\nw0_pad4,%.4f\n", w0, w0 * z / (z + 4) >> V }' "$D/run/attention.csv"
kv "$V" qp_keys $((QP + 1))

# Shapes and bytes of the cache right after the prefill.
awk -F, -v V="$V" '
NR > 1 && $1 == "prefill" && $4 ~ /attn\.cache_k$/ { ck = $5 }
NR > 1 && $1 == "prefill" && $4 ~ /attn\.cache_v$/ { cv = $5 }
NR > 1 && $1 == "prefill" && $4 ~ /attn\.hook_pattern$/ { pat = $5; split($5, s, "x"); NH = s[2]; T = s[3] }
NR > 1 && $1 == "prefill" && $4 ~ /hook_resid_pre$/ { split($5, s, "x"); C = s[3] }
NR > 1 && $3 ~ /^[0-9]+$/ && $3 + 1 > L { L = $3 + 1 }
END {
    print "cache_k," ck >> V; print "cache_v," cv >> V; print "pattern," pat >> V
    print "T," T >> V; print "NH," NH >> V; print "C," C >> V; print "L," L >> V
    print "TT," T * T >> V; print "causal," T * (T + 1) / 2 >> V
    print "causal_all_heads," NH * T * (T + 1) / 2 >> V
}' "$D/run/shapes.csv"
awk -F, -v V="$V" "$AWKLIB"'
NR > 1 && $1 == "prefill" {
    print "kv_bytes," $4 >> V; print "kv_bytes_c3," c3($4) >> V; print "kv_kib," kib($4) >> V
    print "kv_reserved," $5 >> V; print "kv_reserved_c3," c3($5) >> V
    print "kv_per_token," $4 / $3 >> V; print "kv_per_token_c3," c3($4 / $3) >> V
}' "$D/run/kv_memory.csv"

# The FLOPs of the prefill, split by operation (counted by the engine).
awk -F, -v V="$V" "$AWKLIB"'
NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
$1 == "prefill" {
    split("flops_qkv flops_attn flops_attn_proj flops_mlp flops_lm_head flops_elementwise", op, " ")
    name["flops_qkv"] = "c_attn: Q, K, V projections"
    name["flops_attn"] = "attention: q·kᵀ and weights·V (causal)"
    name["flops_attn_proj"] = "attention c_proj"
    name["flops_mlp"] = "MLP: c_fc and c_proj"
    name["flops_lm_head"] = "lm_head (last position only)"
    name["flops_elementwise"] = "layer norms, softmax, GELU, residual adds"
    tot = 0; for (i = 1; i <= 6; i++) tot += $(col[op[i]])
    print "| operation | FLOPs | share |"
    print "|---|---:|---:|"
    for (i = 1; i <= 6; i++) { f = $(col[op[i]]); printf "| %s | %s | %.2f %% |\n", name[op[i]], c3(f), 100 * f / tot }
    printf "| **total** | **%s** | 100 %% |\n", c3(tot)
    print "flops_total," c3(tot) >> V
    printf "attn_share,%.2f\n", 100 * $(col["flops_attn"]) / tot >> V
    printf "mlp_share,%.1f\n", 100 * $(col["flops_mlp"]) / tot >> V
}' "$D/run/flops.csv" > "$D/flops_split.md"

# Why attention grows as T²: prefill prompts of T = 8 .. 256 tokens (ids 0..T-1).
mkdir -p "$D/sweep"
echo "T,flops_attn,flops_rest" > "$D/sweep/prefill_flops.csv"
for T in 8 16 32 64 128 256; do
    ids=$(awk -v n=$T 'BEGIN { s = "0"; for (i = 1; i < n; i++) s = s "," (i % 256); print s }')
    "$KV" run $MODEL_ARGS --prompt-ids "$ids" --steps 0 --record flops --out "$D/sweep/T$T" --quiet
    awk -F, -v T=$T 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { printf "%d,%s,%.0f\n", T, $(c["flops_attn"]), $(c["flops_qkv"]) + $(c["flops_attn_proj"]) + $(c["flops_mlp"]) }' \
        "$D/sweep/T$T/flops.csv" >> "$D/sweep/prefill_flops.csv"
    rm -rf "$D/sweep/T$T"
done
awk -F, "$AWKLIB"'
NR == 1 { print "| prompt tokens T | attention FLOPs | × previous row | projections + MLP FLOPs | × previous row | attention share |"
          print "|---:|---:|---:|---:|---:|---:|"; next }
{ printf "| %d | %s | %s | %s | %s | %.1f %% |\n", $1, c3($2), (pa ? sprintf("%.2f", $2 / pa) : ""),
         c3($3), (pr ? sprintf("%.2f", $3 / pr) : ""), 100 * $2 / ($2 + $3); pa = $2; pr = $3 }
' "$D/sweep/prefill_flops.csv" > "$D/prefill_sweep.md"

chart lesson2_prefill_flops "$P/prefill_flops" -e "in='$D/sweep/prefill_flops.csv'"
figure prefill_flops.png "FLOPs of a prefill vs prompt length: the attention line is steeper (×4 per doubling) than the projections and MLP (×2), yet stays below them here"

lesson_end 2
