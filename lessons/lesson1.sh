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
T0=$(awk -F, '$1 == "prefill" { print $3 }' "$D/run/kv_memory.csv")
figure prefill_qkv_L0_H00.png "Q, Kᵀ and V of head 0 for the $T0 prompt tokens of $PROMPT: look at the shapes — Q and V have one row per token, Kᵀ one column per token"

# The prompt's tokens: the built-in model reads UTF-8 bytes, so each character is
# several tokens. A byte >= 0xC0 (or < 0x80) starts a character.
awk -F, '
function flush() { if (n) { for (i = 1; i <= n; i++) ch = ch sprintf("%c", b[i]); row[first] = ch; ch = ""; n = 0 } }
NR > 1 && $1 == 0 {
    id = $3 + 0; pos[++T] = $2; tok[T] = id; txt[T] = $4
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
awk -F, '
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
NR > 1 && $1 == "prefill" { if (!($4 in pre)) order[++n] = $4; pre[$4] = $5 }
NR > 1 && $1 == "decode" && $2 == 1 { dec[$4] = $5 }
END {
    print "| hook point | prefill (whole prompt) | decode step 1 (one new token) | what it holds |"
    print "|---|---|---|---|"
    for (i = 1; i <= n; i++) {
        k = order[i]; short = k; sub(/^blocks\.[0-9]+\./, "", short)
        printf "| `%s` | %s | %s | %s |\n", k, pre[k], dec[k], (short in d) ? d[short] : ""
    }
}' "$D/run/shapes.csv" > "$D/shapes.md"

# The dimension letters, read back from the shapes the engine reported.
awk -F, -v prompt="$PROMPT" '
NR > 1 && $1 == "prefill" && $4 ~ /attn\.hook_q$/ { split($5, s, "x"); T = s[2]; NH = s[3]; hs = s[4] }
NR > 1 && $1 == "prefill" && $4 ~ /hook_resid_pre$/ { split($5, s, "x"); C = s[3] }
NR > 1 && $1 == "prefill" && $4 ~ /mlp\.hook_pre$/ { split($5, s, "x"); C4 = s[3] }
NR > 1 && $4 == "hook_logits" { split($5, s, "x"); V = s[2] }
NR > 1 && $3 ~ /^[0-9]+$/ && $3 + 1 > L { L = $3 + 1 }
END {
    print "key,value"
    print "prompt," prompt; print "T," T; print "C," C; print "NH," NH; print "hs," hs
    print "C3," 3 * C; print "C4," C4; print "V," V; print "L," L
    print "T1," T + 1
}' "$D/run/shapes.csv" > "$D/values.csv"
kv "$D/values.csv" chars "$(printf '%s' "$PROMPT" | od -An -tu1 | awk '{ for (i = 1; i <= NF; i++) if ($i < 128 || $i >= 192) n++ } END { print n }')"
kv "$D/values.csv" bytes "$(printf '%s' "$PROMPT" | wc -c | tr -d ' ')"
awk -F, 'FNR == 1 { f++ } f == 1 && $1 == "chars" { c = $2 } f == 1 && $1 == "bytes" { b = $2 }
    f == 2 && $1 == "prefill" && $4 ~ /attn\.hook_q$/ { q = $5 }
    END { print "bytes_per_char," b / c; print "q_shape," q }' "$D/values.csv" "$D/run/shapes.csv" >> "$D/values.csv.add"
cat "$D/values.csv.add" >> "$D/values.csv"; rm -f "$D/values.csv.add"

# The words that depend on the model: the built-in one (random weights, byte tokens)
# or a Hugging Face checkpoint given with --model (its own tokenizer, if it has one).
bytes_ok=$(printf '%s' "$PROMPT" | od -An -tu1 | tr -s ' ' '\n' | grep -v '^$' |
    awk -F, 'FNR == NR { b[++n] = $1; next } FNR > 1 && $1 == 0 { t++; if ($3 != b[t]) bad = 1 }
             END { print (t == n && !bad) ? 1 : 0 }' - "$D/run/tokens.csv")
if [ -z "$MODEL_ARGS" ]; then
    echo "kvscope's built-in model is one GPT-2 layer with the sizes of GPT-2 small:" > "$D/model_intro.md"
    {
        echo "Its weights are random (drawn from a fixed seed), so the text it generates means"
        echo "nothing. That is fine: the shapes, the byte counts and the operation counts are exactly"
        echo "those of one layer of a trained GPT-2 small, and they are what these lessons are about."
    } > "$D/model_note.md"
else
    echo "This run uses the weights given with \`$MODEL_ARGS\` (a Hugging Face GPT-2 folder):" > "$D/model_intro.md"
    echo "With trained weights (a real GPT-2) the generated text means something; the shapes and counts follow the same rules either way." > "$D/model_note.md"
fi
if [ "$bytes_ok" = 1 ]; then
    {
        echo "This model reads the UTF-8 bytes of the text, one token per byte. Each of these"
        awk -F, '$1 == "bytes_per_char" { b = $2 } $1 == "chars" { c = $2 } $1 == "bytes" { n = $2 } $1 == "T" { T = $2 }
            END { printf "Chinese characters takes %s bytes in UTF-8, so %s characters are %s bytes and **T = %s tokens**:\n", b, c, n, T }' "$D/values.csv"
        echo
        cat "$D/tokens.md"
        echo
        echo "(A real GPT-2 tokenizer merges frequent byte sequences into single tokens, so it would"
        echo "need fewer tokens for this text; the counting rules of the cache do not change.)"
    } > "$D/prompt.md"
else
    {
        awk -F, '$1 == "chars" { c = $2 } $1 == "T" { T = $2 }
            END { printf "This model'"'"'s tokenizer turns its %s characters into **T = %s tokens**:\n", c, T }' "$D/values.csv"
        echo
        echo "| position | token id | text |"
        echo "|---|---|---|"
        awk -F, 'NR > 1 && $1 == 0 { printf "| %d | %d | `%s` |\n", $2, $3, $4 }' "$D/run/tokens.csv"
    } > "$D/prompt.md"
fi

lesson_end 1
