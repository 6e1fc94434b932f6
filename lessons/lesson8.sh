#!/bin/sh
# lesson8.sh — data and figures of lesson 8 (what the trained model's heads learned: the
# heads chart, the previous-token and induction heads, what a sliding window does to
# copying).
#   sh lessons/lesson8.sh BIN [--model DIR]      (what `make lesson8` runs)
# Writes data/lesson8/ (heads/, *.md, values.csv), plots/lesson8/, lessons/lesson8.md.
. lessons/lib.sh
lesson_begin 8 "$@"

V="$D/values.csv"
S=4
KEEP=8
kv "$V" model_args "$MODEL_ARGS"
kv "$V" sink $S
kv "$V" keep $KEEP
model_words > "$D/model.md"
# How the shipped model was trained to copy (lessons/model.mk), said only for that model.
if [ "$MODEL_ARGS" = "--model data/model" ]; then
    first=$(sed -n 's/.*--repeat-first \([0-9]*\).*/\1/p' lessons/model.mk)
    share=$(sed -n 's/.*--repeat-share \([0-9.]*\).*/\1/p' lessons/model.mk)
    steps=$(sed -n 's/.*--steps \([0-9]*\).*/\1/p' lessons/model.mk)
    pct=$(awk -v s="$share" 'BEGIN { printf "%.0f", 100 * s }')
    printf '%s\n' "It was trained with a copying curriculum (\`lessons/model.mk\`): in the first $first of its $steps steps every training sequence repeats its first half, then $pct % of them do. An induction head is what predicts such a second half; the rest of the text is the King James Bible." > "$D/curriculum.md"
else
    echo "(Heads form from the training text alone; the shipped model's training also mixed in sequences that repeat their first half.)" > "$D/curriculum.md"
fi

# 1. Every head measured, the chart drawn by kvscope heads.
"$KV" heads $MODEL_ARGS --out "$D/heads" --plots "$P" --quiet
figure heads.png "What every head does, one cell per layer and head: the previous-token score, the induction score, the weight on position 0 and the entropy — look for the one bright cell of each of the first two panels"
pick_heads "$D/heads"
for k in IND_L IND_H IND_SCORE PREV_L PREV_H PREV_SCORE; do eval "kv \"\$V\" $k \"\$$k\""; done
IN=$(head_name $IND_L $IND_H)
awk -F, "$AWKLIB"'FNR == 1 { header(); next }
    { v = col("bits_per_byte"); printf "bpb_%s,%.2f\n", col("copy"), v }' "$D/heads/induction.csv" >> "$V"
# The three best heads by each score, with all four scores.
for by in prev_token induction; do
    awk -F, -v by=$by "$AWKLIB"'FNR == 1 { header(); next }
        { n++; l[n] = col("layer"); h[n] = col("head"); p[n] = col("prev_token"); i[n] = col("induction")
          s[n] = col("sink"); e[n] = col("entropy_bits"); k[n] = col(by) + 0 }
        END {
            for (a = 1; a <= n; a++) o[a] = a
            for (a = 2; a <= n; a++) for (b = a; b > 1 && k[o[b]] > k[o[b - 1]]; b--) { t = o[b]; o[b] = o[b - 1]; o[b - 1] = t }
            print "| layer | head | previous token | induction | sink (position 0) | entropy (bits) |"
            print "|---:|---:|---:|---:|---:|---:|"
            for (a = 1; a <= 3 && a <= n; a++) { x = o[a]; printf "| %d | %d | %.2f | %.2f | %.2f | %.2f |\n", l[x], h[x], p[x], i[x], s[x], e[x] }
        }' "$D/heads/heads.csv" > "$D/top_$by.md"
done

# 2. The induction head on a repeated random sequence: kvscope heads' first random
# sequence (R bytes, twice) as it measured it. PNG only: an SVG of (2R)² cells is too big
# for a slide.
ids=$(awk -F, '$1 == "repeat0" { s = s (s == "" ? "" : ",") $3 } END { print s }' "$D/heads/tokens.csv")
R8=$(awk -F, '$1 == "repeat0" { n++ } END { print n / 2 }' "$D/heads/tokens.csv")
kv "$V" r8 $R8
"$KV" run $MODEL_ARGS --prompt-ids "$ids" --steps 0 --record none --out "$D/tmp" --layers-shown $IND_L --heads-shown $IND_H \
    --plots "$P/hm" --no-gif --no-svg --quiet
mv "$P/hm/prefill_attn_$IN.png" "$P/repeat_attn_ind.png"
rm -rf "$P/hm" "$D/tmp"
figure repeat_attn_ind.png "The induction head (layer $IND_L, head $IND_H) on $R8 random bytes repeated: in the second copy's rows, the bright line $((R8 - 1)) cells left of the diagonal is each token looking at the token after its earlier occurrence"

# 3. What a window does to copying: each random sequence of kvscope heads (a copy of R
# bytes, then the same R bytes), prompted with the first copy and the first KEEP bytes of the
# second; the model then writes the rest greedily, with the full cache, a window shorter than
# the copy distance R and one longer than it. Counted: the bytes of the second copy it gets right.
R=$(awk -F, '$1 == "repeat0" { n++ } END { print n / 2 }' "$D/heads/tokens.csv")
SAMPLES=4
WSHORT=$((R / 2))
WLONG=$((R + S + 8))
kv "$V" R $R
kv "$V" samples $SAMPLES
kv "$V" wshort $WSHORT
kv "$V" wlong $WLONG
kv "$V" rest $((R - KEEP))
kv "$V" prompt_len $((R + KEEP))
for w in full long short; do
    case $w in full) opt="" ;; long) opt="--window $WLONG --sink $S" ;; short) opt="--window $WSHORT --sink $S" ;; esac
    right=0
    s=0
    while [ $s -lt $SAMPLES ]; do
        awk -F, -v q=repeat$s '$1 == q { print $3 }' "$D/heads/tokens.csv" > "$D/seq.txt"
        ids=$(awk -v n=$((R + KEEP)) 'NR <= n { s = s (s == "" ? "" : ",") $1 } END { print s }' "$D/seq.txt")
        "$KV" run $MODEL_ARGS --prompt-ids "$ids" --steps $((R - KEEP)) --record tokens --out "$D/tmp" $opt --quiet
        n=$(awk -F, "$AWKLIB"'FNR == NR { want[FNR - 1] = $1; next } FNR == 1 { header(); next }
            col("step") > 0 && col("token_id") == want[col("pos")] { n++ } END { print n + 0 }' "$D/seq.txt" "$D/tmp/tokens.csv")
        right=$((right + n))
        rm -rf "$D/tmp"
        s=$((s + 1))
    done
    kv "$V" right_$w $right
    kv "$V" pct_$w "$(awk -v a=$right -v b=$((SAMPLES * (R - KEEP))) 'BEGIN { printf "%.1f", 100 * a / b }')"
done
rm -f "$D/seq.txt"

# 4. Matching or position? The same measure at a copy length a quarter as long: a head that
# matches content copies at any distance; one that learned the distance of its training's
# repeats (half the context) copies only there.
RQ=$((R / 4))
kv "$V" rq $RQ
"$KV" heads $MODEL_ARGS --len $RQ --out "$D/heads_quarter" --quiet
rm -f "$D/heads_quarter/tokens.csv"
awk -F, -v V="$V" -v L=$IND_L -v H=$IND_H "$AWKLIB"'FNR == 1 { header(); next }
    { i = col("induction") + 0; if (i > m) { m = i; ml = col("layer"); mh = col("head") }
      if (col("layer") == L && col("head") == H) c = i }
    END { printf "q_ind_chosen,%.2f\nq_ind_best,%.2f\nq_best_layer,%d\nq_best_head,%d\n", c, m, ml, mh >> V }' "$D/heads_quarter/heads.csv"
awk -F, "$AWKLIB"'FNR == 1 { header(); next }
    { printf "q_bpb_%s,%.2f\n", col("copy"), col("bits_per_byte") }' "$D/heads_quarter/induction.csv" >> "$V"
kv "$V" total $((SAMPLES * (R - KEEP)))
rm -f "$D/heads/tokens.csv"

lesson_end 8
