#!/bin/sh
# lesson2.sh — data and figures of lesson 2 (prefill: the whole prompt at once).
#   sh lessons/lesson2.sh BIN [--model DIR]      (what `make lesson2` runs)
# Writes data/lesson2/ (run/, sweep/, *.md, values.csv), plots/lesson2/, lessons/lesson2.md
# and lessons/zh/lesson2.md (every sentence and table written here has a Chinese twin,
# *.zh.md, from the same values).
. lessons/lib.sh
lesson_begin 2 "$@"

PROMPT=$REPEAT_PROMPT
V="$D/values.csv"
kv "$V" prompt "$PROMPT"
kv "$V" model_args "$MODEL_ARGS"
model_words > "$D/model.md"
model_words_zh > "$D/model.zh.md"
# The heads shown: the model's best induction and previous-token heads (kvscope heads).
pick_heads "$D/heads"
rm -f "$D/heads/tokens.csv"
IN=$(head_name $IND_L $IND_H)
PN=$(head_name $PREV_L $PREV_H)
for k in IND_L IND_H IND_SCORE PREV_L PREV_H PREV_SCORE; do eval "kv \"\$V\" $k \"\$$k\""; done
# The head with the best induction score, named for what it is: an induction head (layer
# >= 1, at least 0.5 at every copy distance) or not.
# The copy distances R kvscope heads measured (its copy distances), the shortest and longest.
RLO=$(awk -F, "$AWKLIB"'FNR == 1 { header(); next } { r = col("copy_len") + 0; if (!n++ || r < m) m = r } END { print m }' "$D/heads/induction.csv")
RHI=$(awk -F, "$AWKLIB"'FNR == 1 { header(); next } { r = col("copy_len") + 0; if (r > m) m = r } END { print m }' "$D/heads/induction.csv")
awk -v L=$IND_L -v H=$IND_H -v sc=$IND_SCORE -v lo=$RLO -v hi=$RHI -v zh="$D/ind_words.zh.md" 'BEGIN {
    if (L >= 1 && sc >= 0.5) printf "an **induction head** (layer %d, head %d, induction score at least %.2f at every copy distance R from %d to %d),\n", L, H, sc, lo, hi
    else printf "the head with the best **induction score** (layer %d, head %d, %.2f: no head of this model is an induction head, lesson 8),\n", L, H, sc
    if (L >= 1 && sc >= 0.5) printf "一个**归纳头（induction head）**（第 %d 层的 %d 号头，在 %d 到 %d 的每个复制距离 R 上归纳分数都至少 %.2f），", L, H, lo, hi, sc > zh
    else printf "归纳分数最高的那个头（第 %d 层的 %d 号头，%.2f：这个模型没有一个头算得上归纳头（induction head），见第 8 课），", L, H, sc > zh
}' > "$D/ind_words.md"
LS=$IND_L; [ "$PREV_L" = "$IND_L" ] || LS="$PREV_L,$IND_L"
kv "$V" layers_shown "$LS"
"$KV" run $MODEL_ARGS --prompt "$PROMPT" --steps 0 --record shapes,attention,kv,flops,tokens --out "$D/run" \
    --layers-shown "$LS" --heads-shown all --plots "$P/hm" --no-gif --html "$P/explorer.html" \
    --html-view "layer=$IND_L,head=$IND_H" --quiet \
    --fig-heads "$PREV_L.$PREV_H=previous-token head,$IND_L.$IND_H=$(ind_title $IND_L $IND_SCORE)"
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
ZW="归纳分数最高的头（第 $IND_L 层的 $IND_H 号头）"
figure prefill_attn_ind.png "Prefill, $IW: the ${T0}×${T0} attention weights of the repeated sentence — a head that matches draws, in the rows of the second copy, a line R − 1 cells left of the diagonal, R the copy distance" \
    "预填充（prefill），$ZW：重复句子的 ${T0}×${T0} 注意力权重（标题 Prefill, layer $IND_L, head $IND_H: attention weights）。纵轴 query 是正在计算的词元，横轴 key 是它可以看的词元，色标 weight 为 0 到 1，灰色是被因果掩码遮住的未来。一个靠匹配来复制的头，会在第二遍的那些行里、对角线左边 R − 1 格处画出一条亮线（R 是复制距离）"
figure prefill_attn_prev.png "Prefill, the previous-token head (layer $PREV_L, head $PREV_H): most of each row's weight sits just left of the diagonal, on the token before" \
    "预填充，前一词元头（previous-token head，第 $PREV_L 层的 $PREV_H 号头）的注意力权重：纵轴 query 是正在计算的词元，横轴 key 是它可以看的词元；每行的大部分权重落在对角线紧左边，也就是前一个词元上"
figure prefill_scores_ind.png "Prefill, $IW: the scores q·k/√hs before the softmax — the highest score of a row takes most of that row's weight" \
    "预填充，$ZW：softmax 之前的分数 q·k/√hs（标题里的 scores；蓝为负，红为正，纵轴 query、横轴 key）——一行中最高的分数拿走这一行的大部分权重"
figure prefill_step_ind.png "Prefill, $IW, from real values: Q, K and V of all ${T0} tokens, the masked scores, their softmax and the output Z — every row of Q meets every row of K at once" \
    "预填充，$ZW，全部取自真实数值（标题：全部 ${T0} 个提示词词元一次算完）：上排是 ${T0} 个词元的 Q、K、V（queries、keys、values），下排是遮住未来后的分数 scores、它们的 softmax 权重 weights 和输出 Z = weights·V——Q 的每一行同时与 K 的每一行相遇"
figure prefill_heads_ind.png "Prefill: the attention weights of every head of layer $IND_L on one colour scale — each head looks at the prompt in its own way" \
    "预填充：第 $IND_L 层全部注意力头（0 号头、1 号头……）的注意力权重，共用一个色标（weight，0 到 1）——每个头都以自己的方式看这段提示词"
# What each head of that layer does, from kvscope heads' scores (the caption below the
# figure says only this).
awk -F, -v L=$IND_L "$AWKLIB"'FNR == 1 { header(); next }
    col("layer") == L { h = col("head"); p = col("prev_token"); s = col("sink"); e = col("entropy_bits")
        i = col("induction")
        if (i >= 0.5) w = sprintf("head %d, an induction head (%.2f on the token after the earlier copy, at its weakest copy distance; position 0 %.2f)", h, i, s)
        else if (p >= 0.5) w = sprintf("head %d mostly on the byte before (%.2f)", h, p)
        else if (s >= 0.5) w = sprintf("head %d mostly on position 0 (%.2f)", h, s)
        else w = sprintf("head %d spread out (previous byte %.2f, position 0 %.2f, %.1f bits of entropy)", h, p, s, e)
        if (i >= 0.5) z = sprintf("%d 号头是归纳头（在最不利的复制距离上，仍有 %.2f 的权重落在前一个副本中紧接其后的词元上；位置 0 占 %.2f）", h, i, s)
        else if (p >= 0.5) z = sprintf("%d 号头主要看前一个字节（%.2f）", h, p)
        else if (s >= 0.5) z = sprintf("%d 号头主要看位置 0（%.2f）", h, s)
        else z = sprintf("%d 号头比较分散（前一个字节占 %.2f，位置 0 占 %.2f，熵 %.1f 比特）", h, p, s, e)
        out = out (out == "" ? "" : "; ") w; outz = outz (outz == "" ? "" : "；") z }
    END { print out "."; print outz "。" > zh }' zh="$D/layer_heads.zh.md" "$D/heads/heads.csv" > "$D/layer_heads.md"

# One row of the induction head: the last prompt token's query (the end of the second
# copy's first words), its keys ranked by weight. It sees keys 0..QP.
QP=$((T0 - 1))
awk -F, -v qp=$QP -v L=$IND_L -v H=$IND_H "$AWKLIB"'
FNR == NR { if (FNR > 1) { split($0, a, ","); c = a[3] + 0; ch[a[2]] = toklabel(c, a[4]) } next }
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
    print "| 键的位置 | 它的字节 | 分数 q·k/√hs | 权重（softmax） |" > zh
    print "|---:|---|---:|---:|" > zh
    for (r = 1; r <= 6 && r <= n; r++) { i = o[r]; printf "| %d | `%s` | %.4f | %.4f |\n", k[i], ch[k[i]], s[i], w[i] > zh }
    printf "| 其余 %d 个键 | | | %.4f |\n", n - 6, sum - top(6) > zh
    printf "| 合计 | | | %.4f |\n", sum > zh
}
function top(m,   r, t) { t = 0; for (r = 1; r <= m && r <= n; r++) t += w[o[r]]; return t }' \
    zh="$D/scores_row.zh.md" "$D/run/tokens.csv" "$D/run/attention.csv" > "$D/scores_row.md"
kv "$V" qp_char "$(LC_ALL=C awk -F, -v p=$QP "$AWKLIB"'NR > 1 && $2 == p { printf "%s", toklabel($3, $4) }' "$D/run/tokens.csv")"
kv "$V" qp_next "$(LC_ALL=C awk -v p="$PHRASE_START" -v f="$PHRASE" 'BEGIN { c = substr(f, length(p) + 1, 1); printf "%s", c == " " ? "␣" : c }')"
# the copy distance R of the prompt: the second copy starts R bytes after the first, and an
# induction head's line runs R - 1 cells left of the diagonal
kv "$V" dist "$(( $(printf '%s' "$PHRASE" | wc -c) + 1 ))"
kv "$V" dist_m1 "$(printf '%s' "$PHRASE" | wc -c | tr -d ' ')"
kv "$V" qp_next_pos "$(( $(printf '%s' "$PHRASE_START" | wc -c) + T0 - $(printf '%s' "$PROMPT" | wc -c) ))"
kv "$V" qp $QP
# The weight the induction head's last query puts on the byte to copy, and its heaviest key.
awk -F, -v qp=$QP -v L=$IND_L -v H=$IND_H -v nx="$(printf '%s' "$PHRASE_START" | wc -c)" -v V="$V" "$AWKLIB"'
FNR == 1 { header(); next }
col("phase") == "prefill" && col("layer") == L && col("head") == H && col("query_pos") == qp {
    w = col("weight") + 0; k = col("key_pos") + 0
    if (k == nx + off) wn = w
    if (w > wm) { w2 = wm; wm = w; km = k } else if (w > w2) w2 = w }
END { printf "w_next,%.3f\nw_max,%.3f\nk_max,%d\nw_second,%.3f\n", wn, wm, km, w2 >> V }' off=$(( T0 - $(printf '%s' "$PROMPT" | wc -c) )) "$D/run/attention.csv"
claim "the previous-token head puts most of each row's weight on the token before" "$PREV_SCORE >= 0.5"
claim "on this sentence the head parks most of its weight on position 0 and gives the byte to copy the second-largest share" \
    "$(value "$V" k_max) == 0 && $(value "$V" w_max) > 0.5 && $(value "$V" w_next) == $(value "$V" w_second) && $(value "$V" w_next) < $IND_SCORE"
# Try it 1: a prompt of 30 token ids (the model may put its start token in front).
"$KV" info $MODEL_ARGS --prompt-ids "$(seq -s, 1 30)" > "$D/info30.csv"
kv "$V" try_T "$(value "$D/info30.csv" prompt_tokens)"
rm -f "$D/info30.csv"
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
kv "$V" hs $(( $(value "$V" C) / $(value "$V" NH) ))
kv "$V" T1 $(( $(value "$V" T) + 1 ))
# 6·C keys: where a token's attention (4·C per key) catches up with its 24·C² of matrices
kv "$V" six_c $((6 * $(value "$V" C)))
claim "6·C keys are far beyond this prompt" "$(value "$V" six_c) > 10 * $(value "$V" T)"
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
    zn["flops_qkv"] = "c_attn：Q、K、V 投影"
    zn["flops_attn"] = "注意力：q·kᵀ 与 权重·V（因果）"
    zn["flops_attn_proj"] = "注意力的 c_proj"
    zn["flops_mlp"] = "MLP：c_fc 与 c_proj"
    zn["flops_lm_head"] = "lm_head（只算最后一个位置）"
    zn["flops_elementwise"] = "层归一化、softmax、GELU、残差相加"
    tot = 0; for (i = 1; i <= 6; i++) tot += col(op[i])
    print "| operation | FLOPs | share |"
    print "|---|---:|---:|"
    for (i = 1; i <= 6; i++) { f = col(op[i]); printf "| %s | %s | %.2f %% |\n", name[op[i]], digits(f), 100 * f / tot }
    printf "| **total** | **%s** | 100 %% |\n", digits(tot)
    print "| 运算 | 浮点运算次数 | 占比 |" > zh
    print "|---|---:|---:|" > zh
    for (i = 1; i <= 6; i++) { f = col(op[i]); printf "| %s | %s | %.2f %% |\n", zn[op[i]], digits(f), 100 * f / tot > zh }
    printf "| **合计** | **%s** | 100 %% |\n", digits(tot) > zh
    print "flops_total," digits(tot) >> V
    printf "attn_share,%.2f\n", 100 * col("flops_attn") / tot >> V
    printf "mlp_share,%.1f\n", 100 * col("flops_mlp") / tot >> V
}' zh="$D/flops_split.zh.md" "$D/run/flops.csv" > "$D/flops_split.md"

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
          print "|---:|---:|---:|---:|---:|---:|"
          print "| 提示词词元数 T | 注意力 FLOPs | 与上一行之比 | 投影 + MLP 的 FLOPs | 与上一行之比 | 注意力占比 |" > zh
          print "|---:|---:|---:|---:|---:|---:|" > zh; next }
{ a = col("flops_attn"); r = col("flops_rest")
  row = sprintf("| %d | %s | %s | %s | %s | %.1f %% |", col("T"), digits(a), (pa ? sprintf("%.2f", a / pa) : ""),
         digits(r), (pr ? sprintf("%.2f", r / pr) : ""), 100 * a / (a + r)); pa = a; pr = r
  print row; print row > zh }
' zh="$D/prefill_sweep.zh.md" "$D/sweep/prefill_flops.csv" > "$D/prefill_sweep.md"

chart lesson2_prefill_flops "$P/prefill_flops" -e "in='$D/sweep/prefill_flops.csv'; L=$(value "$V" L)"
figure prefill_flops.png "FLOPs of a prefill of all $(value "$V" L) layers vs prompt length: the attention line is steeper (×4 per doubling) than the projections and MLP (×2), yet stays below them here" \
    "一次预填充的浮点运算次数（FLOPs，纵轴）与提示词长度 T（横轴，词元数）的关系（标题：全部 $(value "$V" L) 层的预填充，注意力按 T² 增长，投影和 MLP 按 T 增长）：注意力那条线（attention: q·kᵀ and weights·V）更陡（T 翻倍，×4），投影和 MLP 那条线（c_attn + c_proj + MLP）较平（×2），但在这里注意力仍在它下面"

# First pictures of the cache, from this run's shapes: the cache as the tensor it is (every
# layer), and the prefill's square of scores against a decode step's one row.
chart lesson2_cache_layers "$P/cache_layers" -e "L=$(value "$V" L); NH=$(value "$V" NH); T=$(value "$V" T); hs=$(value "$V" hs); eb=4"
figure cache_layers.png "The KV cache right after the prefill as the tensor it is: $(value "$V" L) layers × K and V × $(value "$V" NH) heads × $(value "$V" T) positions × $(value "$V" hs) numbers; the next decode step appends one position (orange) in every band" \
    "预填充刚结束时的 KV 缓存，画成它本来的张量形状：$(value "$V" L) 层 × K 和 V × $(value "$V" NH) 个头 × $(value "$V" T) 个位置 × $(value "$V" hs) 个数；下一个解码步在每一条带里追加一个位置（橙色）"
chart lesson2_square_row "$P/square_row" -e "T=$(value "$V" T)"
figure square_row.png "One head's scores: the prefill computes the causal half of a $(value "$V" T) × $(value "$V" T) square at once; a decode step computes one row of $(value "$V" T1) scores, its query against every cached key and its own" \
    "一个头的分数：预填充一次算出 $(value "$V" T) × $(value "$V" T) 方阵的因果下半部分；一个解码步只算一行 $(value "$V" T1) 个分数，即它的查询对每个缓存的键和它自己的键"

lesson_end 2
