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
T0=$(awk -F, "$AWKLIB"'FNR == 1 { header(); next } col("phase") == "prefill" { print col("tokens") }' "$D/run/kv_memory.csv")
figure prefill_attn_L0_H00.png "Prefill, head 0: the ${T0}×${T0} attention weights of $PROMPT — row t has t + 1 coloured cells, the grey future is masked, each row sums to 1"
figure prefill_scores_L0_H00.png "Prefill, head 0: the scores q·k/√hs before the softmax — the highest score of a row takes most of that row's weight"
figure prefill_step_L0_H00.png "Prefill, head 0, from real values: Q, K and V of all ${T0} tokens, the masked scores, their softmax and the output Z — every row of Q meets every row of K at once"
figure prefill_heads_L0.png "Prefill: the attention weights of every head of layer 0 on one colour scale — each head looks at the prompt in its own way"
V="$D/values.csv"
kv "$V" prompt "$PROMPT"

# One row of one head: scores before softmax, weights after. Query position QP
# sees keys 0..QP; later keys are masked (they do not exist yet in a causal model).
QP=4
awk -F, -v qp=$QP "$AWKLIB"'
FNR == 1 { header(); next }
col("phase") == "prefill" && col("layer") == 0 && col("head") == 0 && col("query_pos") == qp {
    n++; k[n] = col("key_pos"); s[n] = col("score"); w[n] = col("weight"); sum += col("weight")
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
awk -F, -v qp=$QP -v V="$V" "$AWKLIB"'
FNR == 1 { header(); next }
col("phase") == "prefill" && col("layer") == 0 && col("head") == 0 && col("query_pos") == qp {
    z += exp(col("score")); if (col("key_pos") == 0) w0 = col("weight") }
END { for (n = 1; n <= 4; n *= 4) printf "pad_share_%d,%.1f\n", n, 100 * n / (z + n) >> V
      printf "w0,%.4f\nw0_pad4,%.4f\n", w0, w0 * z / (z + 4) >> V }' "$D/run/attention.csv"
kv "$V" qp_keys $((QP + 1))

# Shapes and bytes of the cache right after the prefill: the shapes the engine reported,
# the counts and the bytes per token kvscope's closed forms give (kvscope info).
awk -F, -v V="$V" "$AWKLIB"'
FNR == 1 { header(); next }
col("phase") != "prefill" { next }
col("name") ~ /attn\.cache_k$/ { ck = col("shape") }
col("name") ~ /attn\.cache_v$/ { cv = col("shape") }
col("name") ~ /attn\.hook_pattern$/ { pat = col("shape") }
END { print "cache_k," ck >> V; print "cache_v," cv >> V; print "pattern," pat >> V }' "$D/run/shapes.csv"
"$KV" info $MODEL_ARGS --prompt "$PROMPT" > "$D/info.csv"
kv "$V" T "$(value "$D/info.csv" prompt_tokens)"
for k in NH C L; do kv "$V" $k "$(value "$D/info.csv" $k)"; done
kv "$V" TT "$(value "$D/info.csv" attention_square)"
kv "$V" causal "$(value "$D/info.csv" attention_causal)"
kv "$V" causal_all_heads "$(value "$D/info.csv" attention_causal_heads)"
awk -F, -v V="$V" "$AWKLIB"'
FNR == 1 { header(); next }
col("phase") == "prefill" {
    print "kv_bytes," col("kv_bytes") >> V; print "kv_bytes_c3," digits(col("kv_bytes")) >> V
    print "kv_kib," bytes(col("kv_bytes")) >> V
    print "kv_reserved," col("kv_reserved_bytes") >> V
    print "kv_reserved_c3," digits(col("kv_reserved_bytes")) >> V
}' "$D/run/kv_memory.csv"
kv "$V" kv_per_token "$(value "$D/info.csv" kv_bytes_per_token)"
kv "$V" kv_per_token_c3 "{{digits $(value "$D/info.csv" kv_bytes_per_token)}}"
rm -f "$D/info.csv"

# The FLOPs of the prefill, split by operation (counted by the engine).
awk -F, -v V="$V" "$AWKLIB"'
FNR == 1 { header(); next }
col("phase") == "prefill" {
    split("flops_qkv flops_attn flops_attn_proj flops_mlp flops_lm_head flops_elementwise", op, " ")
    name["flops_qkv"] = "c_attn: Q, K, V projections"
    name["flops_attn"] = "attention: q·kᵀ and weights·V (causal)"
    name["flops_attn_proj"] = "attention c_proj"
    name["flops_mlp"] = "MLP: c_fc and c_proj"
    name["flops_lm_head"] = "lm_head (last position only)"
    name["flops_elementwise"] = "layer norms, softmax, GELU, residual adds"
    tot = 0; for (i = 1; i <= 6; i++) tot += col(op[i])
    print "| operation | FLOPs | share |"
    print "|---|---:|---:|"
    for (i = 1; i <= 6; i++) { f = col(op[i]); printf "| %s | %s | %.2f %% |\n", name[op[i]], digits(f), 100 * f / tot }
    printf "| **total** | **%s** | 100 %% |\n", digits(tot)
    print "flops_total," digits(tot) >> V
    printf "attn_share,%.2f\n", 100 * col("flops_attn") / tot >> V
    printf "mlp_share,%.1f\n", 100 * col("flops_mlp") / tot >> V
}' "$D/run/flops.csv" > "$D/flops_split.md"

# Why attention grows as T²: prefill prompts of T = 8 .. 256 tokens (ids 0..T-1).
mkdir -p "$D/sweep"
echo "T,flops_attn,flops_rest" > "$D/sweep/prefill_flops.csv"
for T in 8 16 32 64 128 256; do
    ids=$(awk -v n=$T 'BEGIN { s = "0"; for (i = 1; i < n; i++) s = s "," (i % 256); print s }')
    "$KV" run $MODEL_ARGS --prompt-ids "$ids" --steps 0 --record flops --out "$D/sweep/T$T" --quiet
    awk -F, -v T=$T "$AWKLIB"'FNR == 1 { header(); next }
        { printf "%d,%s,%.0f\n", T, col("flops_attn"), col("flops_qkv") + col("flops_attn_proj") + col("flops_mlp") }' \
        "$D/sweep/T$T/flops.csv" >> "$D/sweep/prefill_flops.csv"
    rm -rf "$D/sweep/T$T"
done
awk -F, "$AWKLIB"'
FNR == 1 { header()
          print "| prompt tokens T | attention FLOPs | × previous row | projections + MLP FLOPs | × previous row | attention share |"
          print "|---:|---:|---:|---:|---:|---:|"; next }
{ a = col("flops_attn"); r = col("flops_rest")
  printf "| %d | %s | %s | %s | %s | %.1f %% |\n", col("T"), digits(a), (pa ? sprintf("%.2f", a / pa) : ""),
         digits(r), (pr ? sprintf("%.2f", r / pr) : ""), 100 * a / (a + r); pa = a; pr = r }
' "$D/sweep/prefill_flops.csv" > "$D/prefill_sweep.md"

chart lesson2_prefill_flops "$P/prefill_flops" -e "in='$D/sweep/prefill_flops.csv'"
figure prefill_flops.png "FLOPs of a prefill vs prompt length: the attention line is steeper (×4 per doubling) than the projections and MLP (×2), yet stays below them here"

lesson_end 2
