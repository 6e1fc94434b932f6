#!/bin/sh
# lesson3.sh — data and figures of lesson 3 (decode: one token at a time, the cache
# grows by one row; the proof that it changes nothing; the article's bug).
#   sh lessons/lesson3.sh BIN [--model DIR]      (what `make lesson3` runs)
# Writes data/lesson3/, plots/lesson3/, lessons/lesson3.md.
. lessons/lib.sh
lesson_begin 3 "$@"

PROMPT="人工智能是"
STEPS=8
VSTEPS=20
V="$D/values.csv"
kv "$V" prompt "$PROMPT"
kv "$V" steps $STEPS
kv "$V" vsteps $VSTEPS

"$KV" run $MODEL_ARGS --prompt "$PROMPT" --steps $STEPS --record shapes,attention,kv,flops,tokens --out "$D/run" --plots "$P/hm" --html "$P/explorer.html" --quiet
for f in "$P"/hm/decode_*; do mv "$f" "$P/"; done
rm -rf "$P/hm"
figure decode_stair_L0_H00.gif "Animation: the staircase growing one row per decode step (head 0) — the canvas stays put, only the new row appears"
T0=$(awk -F, '$1 == "prefill" { print $3 }' "$D/run/kv_memory.csv")
# the model's widths, from the hooked shapes: hook_q is 1 x T x NH x hs
awk -F, -v V="$V" 'NR > 1 && $1 == "prefill" && $4 ~ /attn\.hook_q$/ && !done { split($5, s, "x");
    printf "NH,%d\nhs,%d\nC,%d\n", s[3], s[4], s[3] * s[4] >> V; done = 1 }' "$D/run/shapes.csv"
HS=$(awk -F, '$1 == "hs" { print $2 }' "$V")
kv "$V" T0_plus1 $((T0 + 1))
i=1
while [ $i -le $STEPS ]; do
    s=$(printf %03d $i)
    figure decode_s${s}_step_L0_H00.png "Decode step $i, head 0: one query row (1×$HS) against the $((i + T0)) cached keys — the orange rows of K and V are the new token's, appended this step"
    figure decode_s${s}_stair_L0_H00.png "Decode step $i, head 0: the staircase so far — the orange frame is the only row this step computed"
    i=$((i + 1))
done
# What the run prints (the folder line says where it wrote; the reader's will differ).
"$KV" run $MODEL_ARGS --prompt "$PROMPT" --steps 4 --record none --out "$D/tmp" | grep -v '^wrote ' > "$D/run_console.txt"
"$KV" run $MODEL_ARGS --prompt "$PROMPT" --steps 4 --record none --out "$D/tmp" --article-bug --html "$P/explorer_article_bug.html" | grep -v '^wrote ' > "$D/bug_console.txt"
rm -rf "$D/tmp"

# Step by step: Q stays one row, K and V gain one row, the scores are 1×t.
awk -F, "$AWKLIB"'
FNR == 1 { f++; next }
f == 1 && $4 ~ /attn\.hook_q$/ { q[$2] = $5; ph[$2] = $1; if ($2 + 0 > last) last = $2 + 0 }
f == 1 && $4 ~ /attn\.cache_k$/ { k[$2] = $5 }
f == 1 && $4 ~ /attn\.hook_attn_scores$/ { s[$2] = $5 }
f == 2 { b[$2] = $4 }
END {
    print "| phase | step | Q | K cache (V cache the same) | scores, all heads | KV bytes |"
    print "|---|---:|---|---|---|---:|"
    for (i = 0; i <= last; i++) printf "| %s | %d | %s | %s | %s | %s |\n", ph[i], i, q[i], k[i], s[i], c3(b[i])
}' "$D/run/shapes.csv" "$D/run/kv_memory.csv" > "$D/steps.md"
awk -F, -v V="$V" "$AWKLIB"'
NR > 1 && $1 == "prefill" { T0 = $3; b0 = $4 }
NR > 1 { T = $3; b = $4 }
END {
    print "T0," T0 >> V; print "T_end," T >> V; print "kv0," c3(b0) >> V; print "kv_end," c3(b) >> V
    print "kv_step," c3((b - b0) / (T - T0)) >> V
}' "$D/run/kv_memory.csv"

# The proof: with the cache and without it, the same logits.
"$KV" verify $MODEL_ARGS --prompt "$PROMPT" --steps $VSTEPS --csv "$D/verify.csv" > "$D/verify_console.txt"
tail -n 1 "$D/verify_console.txt" > "$D/verify_last.txt"
awk -F, -v V="$V" 'NR > 1 { if ($2 + 0 > m) m = $2 + 0; n++ } END { printf "verify_max,%.9g\nverify_rows,%d\n", m, n >> V }' "$D/verify.csv"

# The article's layer: after a decode step it keeps only that step's K and V.
# verify exits 1 because the logits differ: that is the point here.
st=0
"$KV" verify $MODEL_ARGS --article-bug --prompt "$PROMPT" --steps $VSTEPS --csv "$D/article_bug.csv" > "$D/article_bug_console.txt" || st=$?
if [ $st -ne 1 ]; then echo "lesson3: verify --article-bug exited $st, expected 1" >&2; exit 1; fi
awk -F, -v V="$V" '
NR > 1 { if ($2 + 0 > m) { m = $2 + 0; ms = $1 }
         if ($2 + 0 > 0 && first == "") first = $1
         if ($3 == 0) { nd++; if (fd == "") fd = $1 } }
END { printf "bug_max,%.3g\nbug_max_step,%d\nbug_first,%d\nbug_diff_tokens,%d\nbug_first_diff_token,%s\n",
             m, ms, first, nd, fd == "" ? "none" : fd >> V }' "$D/article_bug.csv"
awk -F, "$AWKLIB"'
NR == 1 { print "| step | max abs(Δlogit), cache vs recompute | same next token? |"; print "|---:|---:|---|"; next }
{ printf "| %d | %.3g | %s |\n", $1, $2, $3 == 1 ? "yes" : "**no**" }' "$D/article_bug.csv" > "$D/article_bug.md"

FIRST=$(awk -F, 'NR > 1 && $2 > 0 { print $1; exit }' "$D/article_bug.csv")
chart lesson3_drift "$P/article_bug_drift" -e "in='$D/article_bug.csv'; ok='$D/verify.csv'; prompt='$PROMPT'; first=${FIRST:-0}"
figure article_bug_drift.png "The article's cache (newest K/V only) vs the correct one: the correct cache stays at exactly 0, the article's jumps from step 2 on"

lesson_end 3
