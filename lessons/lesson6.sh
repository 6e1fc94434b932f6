#!/bin/sh
# lesson6.sh — data and figures of lesson 6 (keeping the cache in budget: a memory cap,
# smaller storage types, a sliding window with sinks).
#   sh lessons/lesson6.sh BIN      (what `make lesson6` runs)
# Writes data/lesson6/, plots/lesson6/, lessons/lesson6.md.
. lessons/lib.sh
lesson_begin 6 "$@"

PROMPT="The KV cache"
CAP_MB=0.25
SHORT=32
S=4
V="$D/values.csv"
kv "$V" model_args "$MODEL_ARGS"
model_words > "$D/model.md"
# The long run fills the context; the window keeps half of it.
"$KV" info $MODEL_ARGS --prompt "$PROMPT" > "$D/info.csv"
N=$(value "$D/info.csv" N)
LONG=$((N - $(value "$D/info.csv" prompt_tokens)))
W=$((N / 2))
rm -f "$D/info.csv"

# 1. The cap: checked before each step allocates; the run stops cleanly (exit 0), with a
# line that says where and how many bytes the cap is.
"$KV" run $MODEL_ARGS --prompt "$PROMPT" --steps 64 --max-kv-mb $CAP_MB --record kv,tokens --out "$D/cap" --html "$P/explorer_cap.html" --heads-shown 0-3 --quiet \
    2> "$D/cap_line.txt"
kv "$V" prompt "$PROMPT"
kv "$V" cap_mb $CAP_MB
kv "$V" cap_bytes "$(sed -n 's/.* > cap \([0-9]*\) bytes$/\1/p' "$D/cap_line.txt")"
kv "$V" short $SHORT
kv "$V" long $LONG
kv "$V" window $W
kv "$V" sink $S
kv "$V" cap_rows "$(awk 'NR > 1 { n++ } END { print n }' "$D/cap/kv_memory.csv")"
# The try-it answer: where --max-tokens 20 stops ("stopped before decode step N").
"$KV" run $MODEL_ARGS --prompt "$PROMPT" --steps 64 --max-tokens 20 --record none --out "$D/maxtok" --quiet \
    2> "$D/maxtok_line.txt"
rm -rf "$D/maxtok"
kv "$V" maxtok_stop_step "$(sed -n 's/.*before decode step \([0-9]*\).*/\1/p' "$D/maxtok_line.txt")"

"$KV" run $MODEL_ARGS --prompt "$PROMPT" --steps 40 --window 24 --sink $S --kv-dtype q8_0 --record none --out "$D/tmp" --html "$P/explorer_window.html" --heads-shown 0-3 --quiet && rm -rf "$D/tmp"

# 2. The storage types, against the fp32 cache; 3. the window, against the full cache.
"$KV" budget $MODEL_ARGS --prompt "$PROMPT" --steps $SHORT --out "$D/short" > "$D/short_console.txt"
"$KV" budget $MODEL_ARGS --prompt "$PROMPT" --steps $LONG --window $W --sink $S --out "$D/long" --quiet
# The same budget of W tokens without sinks: W recent positions instead of S + (W - S).
"$KV" budget $MODEL_ARGS --prompt "$PROMPT" --steps $LONG --window $W --sink 0 --out "$D/nosink" --quiet
grep -v '^wrote ' "$D/short_console.txt" > "$D/short_console.tmp" && mv "$D/short_console.tmp" "$D/short_console.txt"
kv "$V" bf16_over_fp16 "$(awk -v a="$(value "$D/short/summary.csv" max_dlogit_fp16)" \
    -v b="$(value "$D/short/summary.csv" max_dlogit_bf16)" 'BEGIN { printf "%.0f", b / a }')"

chart lesson6_bytes_error "$P/bytes_vs_error" \
    -e "short='$D/short/dtypes.csv'; long='$D/long/dtypes.csv'; nshort='$SHORT steps'; nlong='$LONG steps'"
chart lesson6_window_growth "$P/window_growth" -e "in='$D/long/window.csv'; nosink='$D/nosink/window.csv'; W=$W; S=$S"
figure bytes_vs_error.png "Every storage type against fp32: halving the bytes (fp16, bf16) or quartering them (int8, q8_0) costs logit error, and bf16 errs more than fp16 for the same bytes"
# 4. A window too small for the repeated phrase, in text: the first copy's distance is the
# phrase and its space; a window longer than that (plus the sinks) still holds the bytes the
# copy needs, a shorter one has evicted them.
DIST=$(($(printf '%s' "$PHRASE" | wc -c) + 1))
WSMALL=$((DIST / 2))
WBIG=$((DIST + S + 4))
GSTEPS=48
kv "$V" dist $DIST
kv "$V" wsmall $WSMALL
kv "$V" wbig $WBIG
kv "$V" gsteps $GSTEPS
kv "$V" rprompt "$REPEAT_PROMPT"
kv "$V" phrase_start "$PHRASE_START"
kv "$V" copy_len "$(printf '%s' "$COPY_WANT" | wc -c | tr -d ' ')"
"$KV" run $MODEL_ARGS --prompt "$REPEAT_PROMPT" --steps $GSTEPS --record tokens --out "$D/g_full" --quiet
"$KV" run $MODEL_ARGS --prompt "$REPEAT_PROMPT" --steps $GSTEPS --record tokens --out "$D/g_big" --window $WBIG --sink $S --quiet
"$KV" run $MODEL_ARGS --prompt "$REPEAT_PROMPT" --steps $GSTEPS --record tokens --out "$D/g_small" --window $WSMALL --sink $S --quiet \
    --html "$P/explorer_small_window.html"
kv "$V" rprompt_tokens "$(awk -F, "$AWKLIB"'FNR == 1 { header(); next } col("step") == 0 { n++ } END { print n }' "$D/g_full/tokens.csv")"
{
    printf 'its first copy goes:  %s%s\n' "$PHRASE_START" "$COPY_WANT"
    for w in full big small; do
        t=$(generated "$D/g_$w")
        case $w in full) lbl="the full cache:      " ;; big) lbl="window $WBIG, $S sinks:" ;; small) lbl="window $WSMALL, $S sinks:" ;; esac
        printf '%-21s %s%s\n' "$lbl" "$PHRASE_START" "$t"
        kv "$V" copied_$w "$(copied "$t" "$COPY_WANT")"
    done
} > "$D/window_texts.txt"
rm -rf "$D/g_full" "$D/g_big" "$D/g_small"

figure window_growth.png "A window of $W tokens: memory stops growing (top), the logits drift from the full cache's (bottom), less with $S sinks kept than with none for the same $W tokens"

lesson_end 6
