#!/bin/sh
# lesson2.sh — data and figures of lesson 2 (prefill: the whole prompt at once).
#   sh lessons/lesson2.sh BIN [--model DIR]      (what `make lesson2` runs)
# Writes data/lesson2/ (run/, sweep/, *.md, values.csv), plots/lesson2/, lessons/lesson2.md.
. lessons/lib.sh
lesson_begin 2 "$@"

PROMPT=$REPEAT_PROMPT
V="$D/values.csv"
kv "$V" prompt "$PROMPT"
kv "$V" model_args "$MODEL_ARGS"
model_words > "$D/model.md"
# The heads shown: the model's best induction and previous-token heads (kvscope heads).
pick_heads "$D/heads"
rm -f "$D/heads/tokens.csv"
IN=$(head_name $IND_L $IND_H)
PN=$(head_name $PREV_L $PREV_H)
for k in IND_L IND_H IND_SCORE PREV_L PREV_H PREV_SCORE; do eval "kv \"\$V\" $k \"\$$k\""; done
# The head with the best induction score, named for what it is: an induction head (layer
# >= 1, at least 0.5 at every copy length) or not.
awk -v L=$IND_L -v H=$IND_H -v sc=$IND_SCORE 'BEGIN {
    if (L >= 1 && sc >= 0.5) printf "an **induction head** (layer %d, head %d, induction score %.2f at every copy length),\n", L, H, sc
    else printf "the head with the best **induction score** (layer %d, head %d, %.2f: no head of this model is an induction head, lesson 8),\n", L, H, sc
}' > "$D/ind_words.md"
LS=$IND_L; [ "$PREV_L" = "$IND_L" ] || LS="$PREV_L,$IND_L"
kv "$V" layers_shown "$LS"
"$KV" run $MODEL_ARGS --prompt "$PROMPT" --steps 0 --record shapes,attention,kv,flops,tokens --out "$D/run" \
    --layers-shown "$LS" --heads-shown all --plots "$P/hm" --no-gif --html "$P/explorer.html" --quiet
# Stable names (the heads are the model's choice): _ind the induction head, _prev the
# previous-token head, prefill_heads_ind every head of the induction head's layer.
for f in attn scores step; do
    for e in png svg; do cp "$P/hm/prefill_${f}_$IN.$e" "$P/prefill_${f}_ind.$e"; done
done
for e in png svg; do
    cp "$P/hm/prefill_attn_$PN.$e" "$P/prefill_attn_prev.$e"
    cp "$P/hm/prefill_heads_L$IND_L.$e" "$P/prefill_heads_ind.$e"
done
rm -rf "$P/hm"
T0=$(awk -F, "$AWKLIB"'FNR == 1 { header(); next } col("phase") == "prefill" { print col("tokens") }' "$D/run/kv_memory.csv")
IW="the head with the best induction score (layer $IND_L, head $IND_H)"
figure prefill_attn_ind.png "Prefill, $IW: the ${T0}×${T0} attention weights of the repeated sentence — a head that matches draws, in the rows of the second copy, a line one copy's length left of the diagonal"
figure prefill_attn_prev.png "Prefill, the previous-token head (layer $PREV_L, head $PREV_H): most of each row's weight sits just left of the diagonal, on the token before"
figure prefill_scores_ind.png "Prefill, $IW: the scores q·k/√hs before the softmax — the highest score of a row takes most of that row's weight"
figure prefill_step_ind.png "Prefill, $IW, from real values: Q, K and V of all ${T0} tokens, the masked scores, their softmax and the output Z — every row of Q meets every row of K at once"
figure prefill_heads_ind.png "Prefill: the attention weights of every head of layer $IND_L on one colour scale — each head looks at the prompt in its own way"
# What each head of that layer does, from kvscope heads' scores (the caption below the
# figure says only this).
awk -F, -v L=$IND_L "$AWKLIB"'FNR == 1 { header(); next }
    col("layer") == L { h = col("head"); p = col("prev_token"); s = col("sink"); e = col("entropy_bits")
        i = col("induction")
        if (i >= 0.5) w = sprintf("head %d, an induction head (%.2f on the token after the earlier copy, at its weakest copy length; position 0 %.2f)", h, i, s)
        else if (p >= 0.5) w = sprintf("head %d mostly on the byte before (%.2f)", h, p)
        else if (s >= 0.5) w = sprintf("head %d mostly on position 0 (%.2f)", h, s)
        else w = sprintf("head %d spread out (previous byte %.2f, position 0 %.2f, %.1f bits of entropy)", h, p, s, e)
        out = out (out == "" ? "" : "; ") w }
    END { print out "." }' "$D/heads/heads.csv" > "$D/layer_heads.md"

# One row of the induction head: the last prompt token's query (the end of the second
# copy's first words), its keys ranked by weight. It sees keys 0..QP.
QP=$((T0 - 1))
awk -F, -v qp=$QP -v L=$IND_L -v H=$IND_H "$AWKLIB"'
FNR == NR { if (FNR > 1) { split($0, a, ","); c = a[3] + 0; ch[a[2]] = c == 32 ? "␣" : c == 10 ? "¶" : sprintf("%c", c) } next }
FNR == 1 { header(); next }
col("phase") == "prefill" && col("layer") == L && col("head") == H && col("query_pos") == qp {
    n++; k[n] = col("key_pos"); s[n] = col("score"); w[n] = col("weight"); sum += col("weight")
}
END {
    for (i = 1; i <= n; i++) o[i] = i
    for (i = 2; i <= n; i++) for (j = i; j > 1 && w[o[j]] > w[o[j - 1]]; j--) { t = o[j]; o[j] = o[j - 1]; o[j - 1] = t }
    print "| key position | its byte | score q·k/√hs | weight (softmax) |"
    print "|---:|---|---:|---:|"
    for (r = 1; r <= 6 && r <= n; r++) { i = o[r]; printf "| %d | `%s` | %.4f | %.4f |\n", k[i], ch[k[i]], s[i], w[i] }
    printf "| the other %d keys | | | %.4f |\n", n - 6, sum - top(6)
    printf "| sum | | | %.4f |\n", sum
}
function top(m,   r, t) { t = 0; for (r = 1; r <= m && r <= n; r++) t += w[o[r]]; return t }' \
    "$D/run/tokens.csv" "$D/run/attention.csv" > "$D/scores_row.md"
kv "$V" qp_char "$(LC_ALL=C awk -F, -v p=$QP 'NR > 1 && $2 == p { c = $3 + 0; printf "%s", c == 32 ? "␣" : sprintf("%c", c) }' "$D/run/tokens.csv")"
kv "$V" qp_next "$(LC_ALL=C awk -v p="$PHRASE_START" -v f="$PHRASE" 'BEGIN { c = substr(f, length(p) + 1, 1); printf "%s", c == " " ? "␣" : c }')"
kv "$V" qp_next_pos "$(( $(printf '%s' "$PHRASE_START" | wc -c) + T0 - $(printf '%s' "$PROMPT" | wc -c) ))"
kv "$V" qp $QP
# Padding without a mask (one article's pad_kv_cache): a zero key scores q·0 = 0, so
# each padded slot takes e⁰ / (Σ eˢ + n·e⁰) of the weight. With the mask it takes 0.
awk -F, -v qp=$QP -v V="$V" -v L=$IND_L -v H=$IND_H "$AWKLIB"'
FNR == 1 { header(); next }
col("phase") == "prefill" && col("layer") == L && col("head") == H && col("query_pos") == qp {
    z += exp(col("score")); if (col("key_pos") == 0) w0 = col("weight") }
END { for (n = 1; n <= 4; n *= 4) printf "pad_share_%d,%.2g\n", n, 100 * n / (z + n) >> V
      # as few digits as tell the two weights apart (at least 3)
      w4 = w0 * z / (z + 4)
      for (p = 3; p < 9 && sprintf("%." p "g", w0) == sprintf("%." p "g", w4); p++) {}
      printf "w0,%s\nw0_pad4,%s\n", sprintf("%." p "g", w0), sprintf("%." p "g", w4) >> V }' "$D/run/attention.csv"
claim "key 0's weight drops when four padded slots join the row" "$(value "$V" w0) > $(value "$V" w0_pad4)"
# The weight the induction head's last query puts on the byte to copy, and its heaviest key.
awk -F, -v qp=$QP -v L=$IND_L -v H=$IND_H -v nx="$(printf '%s' "$PHRASE_START" | wc -c)" -v V="$V" "$AWKLIB"'
FNR == 1 { header(); next }
col("phase") == "prefill" && col("layer") == L && col("head") == H && col("query_pos") == qp {
    w = col("weight") + 0; k = col("key_pos") + 0
    if (k == nx + off) wn = w
    if (w > wm) { wm = w; km = k } }
END { printf "w_next,%.3f\nw_max,%.3f\nk_max,%d\n", wn, wm, km >> V }' off=$(( T0 - $(printf '%s' "$PROMPT" | wc -c) )) "$D/run/attention.csv"
claim "the previous-token head puts most of each row's weight on the token before" "$PREV_SCORE >= 0.5"
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
    # T ids beginning with 255: a model whose start token is 255 (data/model) reads them as
    # they are, without a second one in front, so every prompt is T tokens either way
    ids=$(awk -v n=$T 'BEGIN { s = "255"; for (i = 1; i < n; i++) s = s "," (i % 255); print s }')
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
