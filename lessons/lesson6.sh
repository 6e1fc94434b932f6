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
LONG=480
W=128
S=4
V="$D/values.csv"

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
figure window_growth.png "A window of $W tokens: memory stops growing (top), the logits drift from the full cache's (bottom), less with $S sinks kept than with none for the same $W tokens"

lesson_end 6
