#!/bin/sh
# lesson1.sh — data and figures of lesson 1 (one GPT-2 layer, the shape of every tensor).
#   sh lessons/lesson1.sh BIN [--model DIR]      (what `make lesson1` runs)
# Writes data/lesson1/ (run/, tokens.md, shapes.md, values.csv), plots/lesson1/,
# lessons/lesson1.md and lessons/zh/lesson1.md (every sentence and table written here
# has a Chinese twin, *.zh.md, from the same values).
. lessons/lib.sh
lesson_begin 1 "$@"

PROMPT="人工智能是"
"$KV" run $MODEL_ARGS --prompt "$PROMPT" --steps 1 --record shapes,tokens,kv --out "$D/run" --plots "$P/hm" --html "$P/explorer.html" --quiet
mv "$P/hm/prefill_qkv_L0_H00.png" "$P/hm/prefill_qkv_L0_H00.svg" "$P/"
rm -rf "$P/hm"
T0=$(awk -F, "$AWKLIB"'FNR == 1 { header(); next } col("phase") == "prefill" { print col("tokens") }' "$D/run/kv_memory.csv")
figure prefill_qkv_L0_H00.png "Q, Kᵀ and V of head 0 for the $T0 prompt tokens of $PROMPT: look at the shapes — Q and V have one row per token, Kᵀ one column per token" \
    "第 0 个注意力头（head）的 Q、Kᵀ 和 V，来自提示词“$PROMPT”的 $T0 个词元（token）的预填充（prefill）：左 Q、中 Kᵀ（K 的转置）、右 V，红正蓝负。看形状：Q 和 V 每个词元一行，Kᵀ 每个词元一列"

# The prompt's tokens: the built-in model reads UTF-8 bytes, so each character is
# several tokens. A byte >= 0xC0 (or < 0x80) starts a character.
awk -F, "$AWKLIB"'
function flush() { if (n) { for (i = 1; i <= n; i++) ch = ch sprintf("%c", b[i]); row[first] = ch; rowzh[first] = ch; ch = ""; n = 0 } }
FNR == 1 { header(); next }
col("step") == 0 {
    id = col("token_id") + 0; pos[++T] = col("pos"); tok[T] = id; txt[T] = col("text")
    if (txt[T] == "⟨s⟩") { row[T] = "(the start token)"; rowzh[T] = "（起始词元）"; next }
    if (id < 128 || id >= 192) { flush(); first = T }
    b[++n] = id
}
END {
    flush()
    print "| position | token id | byte | character it starts |"
    print "|---|---|---|---|"
    for (t = 1; t <= T; t++) printf "| %d | %d | `%s` | %s |\n", pos[t], tok[t], txt[t], (t in row) ? row[t] : ""
    print "| 位置 | 词元 id | 字节 | 以它开头的字符 |" > zh
    print "|---|---|---|---|" > zh
    for (t = 1; t <= T; t++) printf "| %d | %d | `%s` | %s |\n", pos[t], tok[t], txt[t], (t in rowzh) ? rowzh[t] : "" > zh
}' zh="$D/tokens.zh.md" "$D/run/tokens.csv" > "$D/tokens.md"

# Every hook point of the block, prefill and first decode step side by side.
awk -F, "$AWKLIB"'
BEGIN {
    d["hook_resid_pre"] = "the residual stream entering the block: token embedding + position embedding"
    d["ln1.hook_normalized"] = "ln_1: every row normalised (mean 0, variance 1), then scaled and shifted"
    d["attn.hook_q"] = "queries: columns 0..C-1 of c_attn, split into NH heads of hs numbers"
    d["attn.hook_k"] = "keys of the new tokens: columns C..2C-1 of c_attn"
    d["attn.hook_v"] = "values of the new tokens: columns 2C..3C-1 of c_attn"
    d["attn.cache_k"] = "the K cache after the new keys were appended: every token so far"
    d["attn.cache_v"] = "the V cache, the same for values"
    d["attn.hook_attn_scores"] = "scores q·kᵀ/√hs: one (new tokens)×(all tokens) matrix per head, future masked"
    d["attn.hook_pattern"] = "attention weights: softmax of each score row (each row sums to 1)"
    d["attn.hook_z"] = "each head’s weighted sum of the cached values"
    d["hook_attn_out"] = "c_proj: the heads joined back to C numbers and mixed"
    d["hook_resid_mid"] = "residual stream + attention output"
    d["ln2.hook_normalized"] = "ln_2"
    d["mlp.hook_pre"] = "c_fc: widened to 4C"
    d["mlp.hook_post"] = "GELU of that"
    d["hook_mlp_out"] = "the MLP’s c_proj: back to C"
    d["hook_resid_post"] = "residual + MLP output: the block’s output (the next block’s input)"
    d["hook_logits"] = "ln_f, then lm_head (the embedding matrix reused): one score per vocabulary entry, last position only"
    z["hook_resid_pre"] = "进入本块的残差流（residual stream）：词元嵌入 + 位置嵌入"
    z["ln1.hook_normalized"] = "ln_1：每行先归一化（均值 0、方差 1），再缩放、平移"
    z["attn.hook_q"] = "查询：c_attn 的第 0..C-1 列，切成 NH 个头，每头 hs 个数"
    z["attn.hook_k"] = "新词元的键：c_attn 的第 C..2C-1 列"
    z["attn.hook_v"] = "新词元的值：c_attn 的第 2C..3C-1 列"
    z["attn.cache_k"] = "追加新键之后的 K 缓存：到目前为止的每个词元"
    z["attn.cache_v"] = "V 缓存，同上，存的是值"
    z["attn.hook_attn_scores"] = "注意力分数 q·kᵀ/√hs：每个头一个（新词元）×（全部词元）矩阵，未来被遮住"
    z["attn.hook_pattern"] = "注意力权重：每行分数做 softmax（每行之和为 1）"
    z["attn.hook_z"] = "每个头对缓存中的值所做的加权和"
    z["hook_attn_out"] = "c_proj：各头拼回 C 个数并混合"
    z["hook_resid_mid"] = "残差流 + 注意力输出"
    z["ln2.hook_normalized"] = "ln_2"
    z["mlp.hook_pre"] = "c_fc：加宽到 4C"
    z["mlp.hook_post"] = "再做 GELU"
    z["hook_mlp_out"] = "MLP 的 c_proj：变回 C"
    z["hook_resid_post"] = "残差 + MLP 输出：本块的输出（下一块的输入）"
    z["hook_logits"] = "ln_f，再经 lm_head（复用嵌入矩阵）：词表中每一项一个 logit，只算最后一个位置"
}
FNR == 1 { header(); next }
# the first block and what follows the last one; every block has the same shapes
col("name") ~ /^blocks\./ && col("name") !~ /^blocks\.0\./ { next }
col("phase") == "prefill" { k = col("name"); if (!(k in pre)) order[++n] = k; pre[k] = col("shape") }
col("phase") == "decode" && col("step") == 1 { dec[col("name")] = col("shape") }
END {
    print "| hook point | prefill (whole prompt) | decode step 1 (one new token) | what it holds |"
    print "|---|---|---|---|"
    for (i = 1; i <= n; i++) {
        k = order[i]; short = k; sub(/^blocks\.[0-9]+\./, "", short)
        printf "| `%s` | %s | %s | %s |\n", k, pre[k], dec[k], (short in d) ? d[short] : ""
    }
    print "| 钩子点 | 预填充（整个提示词） | 解码第 1 步（一个新词元） | 存的是什么 |" > zh
    print "|---|---|---|---|" > zh
    for (i = 1; i <= n; i++) {
        k = order[i]; short = k; sub(/^blocks\.[0-9]+\./, "", short)
        printf "| `%s` | %s | %s | %s |\n", k, pre[k], dec[k], (short in z) ? z[short] : "" > zh
    }
}' zh="$D/shapes.zh.md" "$D/run/shapes.csv" > "$D/shapes.md"

# The dimension letters and the widths of the model, as kvscope states them.
"$KV" info $MODEL_ARGS --prompt "$PROMPT" > "$D/info.csv"
I="$D/info.csv"
V="$D/values.csv"
kv "$V" prompt "$PROMPT"
T=$(value "$I" prompt_tokens)
kv "$V" T "$T"
for k in C NH hs; do kv "$V" $k "$(value "$I" $k)"; done
kv "$V" C3 "$(value "$I" qkv_width)"
kv "$V" C4 "$(value "$I" mlp_width)"
for k in V L; do kv "$V" $k "$(value "$I" $k)"; done
kv "$V" T1 $((T + 1))
kv "$V" L1 $(($(value "$V" L) - 1))
rm -f "$I"
# The built-in model (lessons 4 and 5 run it whatever MODEL_ARGS says): its widths.
"$KV" info --prompt "$PROMPT" > "$D/info_builtin.csv"
for k in C NH hs L V; do kv "$V" builtin_$k "$(value "$D/info_builtin.csv" $k)"; done
rm -f "$D/info_builtin.csv"
# Blocks after the first: their shapes repeat the first block's (a one-block model has none).
if [ "$(value "$V" L)" -gt 1 ]; then
    echo "blocks 1 to $(value "$V" L1) repeat the first block's shapes exactly" > "$D/blocks_rest.md"
    echo "第 1 到 $(value "$V" L1) 块的形状与第一个块完全相同" > "$D/blocks_rest.zh.md"
else
    echo "this model has no other block" > "$D/blocks_rest.md"
    echo "这个模型没有别的块" > "$D/blocks_rest.zh.md"
fi
kv "$V" chars "$(printf '%s' "$PROMPT" | od -An -tu1 | awk '{ for (i = 1; i <= NF; i++) if ($i < 128 || $i >= 192) n++ } END { print n }')"
kv "$V" bytes "$(printf '%s' "$PROMPT" | wc -c | tr -d ' ')"
kv "$V" bytes_per_char "$(awk -v b="$(value "$V" bytes)" -v c="$(value "$V" chars)" 'BEGIN { print b / c }')"
kv "$V" q_shape "$(awk -F, "$AWKLIB"'FNR == 1 { header(); next }
    col("phase") == "prefill" && col("name") ~ /attn\.hook_q$/ { print col("shape"); exit }' "$D/run/shapes.csv")"

# The words that depend on the model: the built-in one (random weights, byte tokens)
# or a Hugging Face checkpoint given with --model (its own tokenizer, if it has one).
bytes_ok=$(printf '%s' "$PROMPT" | od -An -tu1 | tr -s ' ' '\n' | grep -v '^$' |
    awk -F, "$AWKLIB"'FNR == NR { b[++n] = $1; next } FNR == 1 { header(); next }
             col("step") == 0 && col("text") == "⟨s⟩" { start = 1; next }
             col("step") == 0 { t++; if (col("token_id") != b[t]) bad = 1 }
             END { print (t == n && !bad) ? (start ? 2 : 1) : 0 }' - "$D/run/tokens.csv")
model_words > "$D/model.md"
model_words_zh > "$D/model.zh.md"
kv "$V" model_args "$MODEL_ARGS"
case "$MODEL_ARGS" in
"")
    echo "kvscope's built-in model is one GPT-2 layer with the sizes of GPT-2 small:" > "$D/model_intro.md"
    echo "kvscope 的内置模型（built-in model）是一层 GPT-2，宽度与 GPT-2 small 相同：" > "$D/model_intro.zh.md"
    {
        echo "Its weights are random (drawn from a fixed seed), so the text it generates means"
        echo "nothing. That is fine: the shapes, the byte counts and the operation counts are exactly"
        echo "those of one layer of a trained GPT-2 small, and they are what these lessons are about."
    } > "$D/model_note.md"
    {
        echo "它的权重是随机的（由固定的种子生成），所以它生成的文字没有意义。这不要紧：形状、字节数和运算次数与训练好的 GPT-2 small 的一层完全相同，而这些课讲的正是这些。"
    } > "$D/model_note.zh.md" ;;
"--model data/model")
    echo "kvscope's trained model is a small GPT-2 that kvscope trained itself, on the King James Bible:" > "$D/model_intro.md"
    echo "kvscope 训练好的模型（trained model）是 kvscope 自己在英王钦定本《圣经》（King James Bible）上训练的一个小型 GPT-2：" > "$D/model_intro.zh.md"
    {
        echo "It has GPT-2's structure with smaller widths (GPT-2 small has C = 768, NH = 12 heads of"
        echo "hs = 64 and L = 12 layers), and it reads English, so its attention shows what it has learned"
        echo "to look at (lessons 2, 3 and 8). Every shape below follows the same rules at any width;"
        printf "lessons 4 and 5, about GPT-2 small's costs, run kvscope's built-in model: C = %s, NH = %s,\n" "$(value "$V" builtin_C)" "$(value "$V" builtin_NH)"
        printf 'hs = %s as in GPT-2 small, but L = %s layer and a vocabulary of %s byte values.\n' "$(value "$V" builtin_hs)" "$(value "$V" builtin_L)" "$(value "$V" builtin_V)"
    } > "$D/model_note.md"
    {
        echo "它的结构就是 GPT-2，只是更窄（GPT-2 small 是 C = 768，NH = 12 个头、每头 hs = 64，L = 12 层）。它读得懂英文，所以它的注意力能显示它学会了看哪里（第 2、3 和 8 课）。下面的每个形状在任何宽度下都遵循同样的规则；第 4 和第 5 课讲的是 GPT-2 small 的开销，用的是内置模型：C = $(value "$V" builtin_C)，NH = $(value "$V" builtin_NH)，hs = $(value "$V" builtin_hs)，与 GPT-2 small 相同，但只有 L = $(value "$V" builtin_L) 层，词表是 $(value "$V" builtin_V) 个字节值。"
    } > "$D/model_note.zh.md" ;;
*)
    echo "This run uses the weights given with \`$MODEL_ARGS\` (a Hugging Face GPT-2 folder):" > "$D/model_intro.md"
    echo "这次运行使用 \`$MODEL_ARGS\` 指定的权重（一个 Hugging Face GPT-2 文件夹）：" > "$D/model_intro.zh.md"
    echo "With trained weights (a real GPT-2) the generated text means something; the shapes and counts follow the same rules either way." > "$D/model_note.md"
    echo "用训练好的权重（真正的 GPT-2），生成的文字才有意义；不论哪种权重，形状和计数都遵循同样的规则。" > "$D/model_note.zh.md" ;;
esac
if [ "$bytes_ok" != 0 ]; then
    {
        if [ "$bytes_ok" = 2 ]; then
            echo 'This model reads a start token (`⟨s⟩`, a byte value no UTF-8 text contains), then the'
            echo "UTF-8 bytes of the text, one token per byte. Each of these"
            printf 'Chinese characters takes %s bytes in UTF-8, so %s characters are %s bytes and, with the start token, **T = %s tokens**:\n' \
                "$(value "$V" bytes_per_char)" "$(value "$V" chars)" "$(value "$V" bytes)" "$T"
        else
            echo "This model reads the UTF-8 bytes of the text, one token per byte. Each of these"
            printf 'Chinese characters takes %s bytes in UTF-8, so %s characters are %s bytes and **T = %s tokens**:\n' \
                "$(value "$V" bytes_per_char)" "$(value "$V" chars)" "$(value "$V" bytes)" "$T"
        fi
        echo
        cat "$D/tokens.md"
        echo
        echo "(A real GPT-2 tokenizer merges frequent byte sequences into single tokens, so it would"
        echo "need fewer tokens for this text; the counting rules of the cache do not change.)"
    } > "$D/prompt.md"
    {
        if [ "$bytes_ok" = 2 ]; then
            printf '这个模型先读一个起始词元（start token，BOS，记作 `⟨s⟩`，是任何 UTF-8 文本都不含的一个字节值），再逐个读文本的 UTF-8 字节，一个字节一个词元。每个汉字在 UTF-8 中占 '
            printf '%s 个字节，%s 个汉字就是 %s 个字节，加上起始词元，共 **T = %s 个词元**。内置模型没有起始词元，同一段文字在它那里少一个词元。\n' \
                "$(value "$V" bytes_per_char)" "$(value "$V" chars)" "$(value "$V" bytes)" "$T"
        else
            printf '这个模型逐个读文本的 UTF-8 字节，一个字节一个词元。每个汉字在 UTF-8 中占 '
            printf '%s 个字节，%s 个汉字就是 %s 个字节，共 **T = %s 个词元**。\n' \
                "$(value "$V" bytes_per_char)" "$(value "$V" chars)" "$(value "$V" bytes)" "$T"
        fi
        echo
        cat "$D/tokens.zh.md"
        echo
        echo "（真正的 GPT-2 分词器（tokenizer）会把常见的字节序列合并成一个词元，这段文字用的词元会更少，但缓存的计数规则不变。）"
    } > "$D/prompt.zh.md"
else
    {
        printf "This model's tokenizer turns its %s characters into **T = %s tokens**:\n" "$(value "$V" chars)" "$T"
        echo
        echo "| position | token id | text |"
        echo "|---|---|---|"
        awk -F, "$AWKLIB"'FNR == 1 { header(); next }
            col("step") == 0 { printf "| %d | %d | `%s` |\n", col("pos"), col("token_id"), col("text") }' "$D/run/tokens.csv"
    } > "$D/prompt.md"
    {
        printf "这个模型的分词器（tokenizer）把这 %s 个字符切成 **T = %s 个词元**：\n" "$(value "$V" chars)" "$T"
        echo
        echo "| 位置 | 词元 id | 文本 |"
        echo "|---|---|---|"
        awk -F, "$AWKLIB"'FNR == 1 { header(); next }
            col("step") == 0 { printf "| %d | %d | `%s` |\n", col("pos"), col("token_id"), col("text") }' "$D/run/tokens.csv"
    } > "$D/prompt.zh.md"
fi

# A first picture of decoding, from this run's shapes: one new query row against K and V
# caches that grow by a row each step.
chart lesson1_decode_row "$P/decode_row" -e "T0=$(value "$V" T); hs=$(value "$V" hs)"
figure decode_row.png "Decoding with the KV cache, three steps after the $(value "$V" T)-token prompt: each step's one new query row (orange, 1×$(value "$V" hs)) is scored against every row of the K cache and mixes the rows of the V cache into one output row z; each step appends its own k and v, so the caches grow by one row" \
    "用 KV 缓存解码，提示词 $(value "$V" T) 个词元之后的三步：每一步只有一个新的查询行（橙色，1×$(value "$V" hs)），它与 K 缓存的每一行算出一个分数，再用权重把 V 缓存的各行混合成一个输出行 z；每一步都把自己的 k 和 v 追加进去，所以缓存每步长一行"

lesson_end 1
