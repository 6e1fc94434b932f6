#!/bin/sh
# lesson1.sh — data and figures of lesson 1 (one GPT-2 layer, the shape of every tensor).
#   sh lessons/lesson1.sh BIN [--model DIR]      (what `make lesson1` runs)
# Writes data/lesson1/ (run/, tokens.md, shapes.md, values.csv), plots/lesson1/,
# and lessons/lesson1.md.
. lessons/lib.sh
lesson_begin 1 "$@"

PROMPT="人工智能是"
"$KV" run $MODEL_ARGS --prompt "$PROMPT" --steps 1 --record shapes,tokens,kv --out "$D/run" --plots "$P/hm" --html "$P/explorer.html" --quiet
mv "$P/hm/prefill_qkv_L0_H00.png" "$P/hm/prefill_qkv_L0_H00.svg" "$P/"
rm -rf "$P/hm"
T0=$(awk -F, "$AWKLIB"'FNR == 1 { header(); next } col("phase") == "prefill" { print col("tokens") }' "$D/run/kv_memory.csv")
figure prefill_qkv_L0_H00.png "Q, Kᵀ and V of head 0 for the $T0 prompt tokens of $PROMPT: look at the shapes — Q and V have one row per token, Kᵀ one column per token"

# The prompt's tokens: the built-in model reads UTF-8 bytes, so each character is
# several tokens. A byte >= 0xC0 (or < 0x80) starts a character.
awk -F, "$AWKLIB"'
function flush() { if (n) { for (i = 1; i <= n; i++) ch = ch sprintf("%c", b[i]); row[first] = ch; ch = ""; n = 0 } }
FNR == 1 { header(); next }
col("step") == 0 {
    id = col("token_id") + 0; pos[++T] = col("pos"); tok[T] = id; txt[T] = col("text")
    if (txt[T] == "⟨s⟩") { row[T] = "(the start token)"; next }
    if (id < 128 || id >= 192) { flush(); first = T }
    b[++n] = id
}
END {
    flush()
    print "| position | token id | byte | character it starts |"
    print "|---|---|---|---|"
    for (t = 1; t <= T; t++) printf "| %d | %d | `%s` | %s |\n", pos[t], tok[t], txt[t], (t in row) ? row[t] : ""
}' "$D/run/tokens.csv" > "$D/tokens.md"

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
}' "$D/run/shapes.csv" > "$D/shapes.md"

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
kv "$V" model_args "$MODEL_ARGS"
case "$MODEL_ARGS" in
"")
    echo "kvscope's built-in model is one GPT-2 layer with the sizes of GPT-2 small:" > "$D/model_intro.md"
    {
        echo "Its weights are random (drawn from a fixed seed), so the text it generates means"
        echo "nothing. That is fine: the shapes, the byte counts and the operation counts are exactly"
        echo "those of one layer of a trained GPT-2 small, and they are what these lessons are about."
    } > "$D/model_note.md" ;;
"--model data/model")
    echo "kvscope's trained model is a small GPT-2 that kvscope trained itself, on the King James Bible:" > "$D/model_intro.md"
    {
        echo "It has GPT-2's structure with smaller widths (GPT-2 small has C = 768, NH = 12 heads of"
        echo "hs = 64 and L = 12 layers), and it reads English, so its attention shows what it has learned"
        echo "to look at (lessons 2, 3 and 8). Every shape below follows the same rules at any width;"
        echo "lessons 4 and 5, about GPT-2 small's costs, run kvscope's built-in model with GPT-2 small's widths."
    } > "$D/model_note.md" ;;
*)
    echo "This run uses the weights given with \`$MODEL_ARGS\` (a Hugging Face GPT-2 folder):" > "$D/model_intro.md"
    echo "With trained weights (a real GPT-2) the generated text means something; the shapes and counts follow the same rules either way." > "$D/model_note.md" ;;
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
else
    {
        printf "This model's tokenizer turns its %s characters into **T = %s tokens**:\n" "$(value "$V" chars)" "$T"
        echo
        echo "| position | token id | text |"
        echo "|---|---|---|"
        awk -F, "$AWKLIB"'FNR == 1 { header(); next }
            col("step") == 0 { printf "| %d | %d | `%s` |\n", col("pos"), col("token_id"), col("text") }' "$D/run/tokens.csv"
    } > "$D/prompt.md"
fi

lesson_end 1
