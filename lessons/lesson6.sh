#!/bin/sh
# lesson6.sh — data and figures of lesson 6 (keeping the cache in budget: a memory cap,
# smaller storage types, a sliding window with sinks).
#   sh lessons/lesson6.sh BIN      (what `make lesson6` runs)
# Writes data/lesson6/, plots/lesson6/, lessons/lesson6.md.
. lessons/lib.sh
lesson_begin 6 "$1"

PROMPT="The KV cache"
CAP_MB=0.25
SHORT=32
LONG=480
W=128
S=4
V="$D/values.csv"
kv "$V" prompt "$PROMPT"
kv "$V" cap_mb $CAP_MB
kv "$V" cap_bytes $(awk -v x=$CAP_MB 'BEGIN { printf "%d", x * 1048576 }')
kv "$V" short $SHORT
kv "$V" long $LONG
kv "$V" window $W
kv "$V" sink $S

# 1. The cap: checked before each step allocates; the run stops cleanly (exit 0).
"$KV" run --prompt "$PROMPT" --steps 64 --max-kv-mb $CAP_MB --record kv,tokens --out "$D/cap" --quiet \
    2> "$D/cap_line.txt"
awk -F, -v V="$V" 'NR > 1 { last = $0; n++ } END { split(last, f, ","); print "cap_rows," n >> V }' "$D/cap/kv_memory.csv"

# 2. The storage types, against the fp32 cache; 3. the window, against the full cache.
"$KV" budget --prompt "$PROMPT" --steps $SHORT --out "$D/short" > "$D/short_console.txt"
"$KV" budget --prompt "$PROMPT" --steps $LONG --window $W --sink $S --out "$D/long" --quiet
grep -v '^wrote ' "$D/short_console.txt" > "$D/short_console.tmp" && mv "$D/short_console.tmp" "$D/short_console.txt"

chart lesson6_bytes_error "$P/bytes_vs_error" \
    -e "short='$D/short/dtypes.csv'; long='$D/long/dtypes.csv'; nshort='$SHORT steps'; nlong='$LONG steps'"
chart lesson6_window_growth "$P/window_growth" -e "in='$D/long/window.csv'; W=$W; S=$S"

lesson_end 6
