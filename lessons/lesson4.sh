#!/bin/sh
# lesson4.sh — data and figures of lesson 4 (what the cache saves: FLOPs per step and
# cumulative, the articles' T = 10/100/1000 table next to the full count, bytes per FLOP).
#   sh lessons/lesson4.sh BIN [--model DIR]      (what `make lesson4` runs)
# Writes data/lesson4/, plots/lesson4/, lessons/lesson4.md. Measured times are not made
# here (they differ run to run): `make timing` writes data/measured/, which this lesson
# only includes.
. lessons/lib.sh
lesson_begin 4 "$@"
V="$D/values.csv"
ids() { awk -v n="$1" 'BEGIN { s = "0"; for (i = 1; i < n; i++) s = s "," (i % 256); print s }'; }
col() { awk -F, -v c="$2" -v row="$3" 'NR == 1 { for (i = 1; i <= NF; i++) k[$i] = i; next } NR - 1 == row { print $(k[c]) }' "$1"; }

# With the cache: one token of prompt, then decode to T = 1000, counting every step.
TMAX=1000
# The dimensions, read back from the engine's shapes (C channels, L layers, V vocabulary).
"$KV" run $MODEL_ARGS --prompt-ids 0 --steps 0 --record shapes --out "$D/tmp" --quiet
DIMS=$(awk -F, '$4 ~ /hook_resid_pre$/ { split($5, s, "x"); C = s[3] } $4 == "hook_logits" { split($5, s, "x"); V = s[2] }
    $3 ~ /^[0-9]+$/ && $3 + 1 > L { L = $3 + 1 } END { printf "-v C=%d -v L=%d -v Vv=%d", C, L, V }' "$D/tmp/shapes.csv")
echo "$DIMS" | awk '{ for (i = 1; i <= NF; i++) if ($i != "-v") { split($i, a, "="); print a[1] "," a[2] } }' >> "$V.dims"
{ echo "key,value"; cat "$V.dims"; } > "$V"; rm -f "$V.dims"
"$KV" run $MODEL_ARGS --prompt-ids 0 --steps $((TMAX - 1)) --record flops --out "$D/cache" --quiet

"$KV" run $MODEL_ARGS --no-cache --prompt "人工智能是" --steps 8 --record none --out "$D/tmp" --html "$P/explorer_no_cache.html" --heads-shown 0-3 --quiet

# Without the cache, step T recomputes all T tokens: exactly a prefill of T tokens.
# Checked here with --no-cache for the small T, then counted as a prefill for every T.
LENGTHS="10 16 32 64 100 128 256 1000"
echo "T,flops_layers,flops_lm_head,flops_elementwise,flops_qkv,flops_attn,flops_attn_proj,flops_mlp" > "$D/recompute.csv"
for T in $LENGTHS; do
    "$KV" run $MODEL_ARGS --prompt-ids "$(ids $T)" --steps 0 --record flops --out "$D/tmp" --quiet
    awk -F, -v T=$T 'NR == 2 { print T "," $5 "," $6 "," $7 "," $8 "," $9 "," $10 "," $11 }' "$D/tmp/flops.csv" >> "$D/recompute.csv"
    if [ $T -le 100 ]; then
        "$KV" run $MODEL_ARGS --no-cache --prompt-ids "$(ids $((T - 1)))" --steps 1 --record flops --out "$D/tmp" --quiet
        a=$(col "$D/tmp/flops.csv" flops_layers 2)
        b=$(awk -F, -v T=$T '$1 == T { print $2 }' "$D/recompute.csv")
        if [ "$a" != "$b" ]; then echo "lesson4: --no-cache step at T=$T counts $a, prefill of T counts $b" >&2; exit 1; fi
    fi
done
rm -rf "$D/tmp"

# The articles' table (attention pairs only: T² without the cache, T with it) next to
# the engine's counts of the whole step: layers + lm_head + elementwise.
awk -F, -v V="$V" "$AWKLIB"'
FNR == 1 { f++; for (i = 1; i <= NF; i++) k[f, $i] = i; next }
f == 1 && $1 == "decode" { T = $4; cache[T] = $5 + $6 + $7; cattn[T] = $9; clay[T] = $5 }
f == 2 && ($1 == 10 || $1 == 100 || $1 == 1000) { T = $1; re[T] = $2 + $3 + $4; rattn[T] = $6; rlay[T] = $2; Ts[++n] = T }
END {
    print "| T | articles: without cache | articles: with cache | articles: ratio | counted attention FLOPs: without / with | ratio | counted FLOPs of the whole step: without cache | with cache | ratio |"
    print "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for (i = 1; i <= n; i++) {
        T = Ts[i]
        printf "| %d | %s | %s | %d× | %s / %s | %.1f× | %s | %s | %.1f× |\n", T, c3(T * T), c3(T), T,
            c3(rattn[T]), c3(cattn[T]), rattn[T] / cattn[T], c3(re[T]), c3(cache[T]), re[T] / cache[T]
        printf "ratio_%d,%.1f\nattn_ratio_%d,%.1f\ncache_%d,%s\nrecompute_%d,%s\n", T, re[T] / cache[T], T, rattn[T] / cattn[T], T, c3(cache[T]), T, c3(re[T]) >> V
        printf "attn_share_cache_%d,%.1f\n", T, 100 * cattn[T] / cache[T] >> V
        printf "layers_ratio_%d,%.1f\n", T, rlay[T] / clay[T] >> V
        printf "attn_share_recompute_%d,%.1f\n", T, 100 * rattn[T] / re[T] >> V
    }
}' "$D/cache/flops.csv" "$D/recompute.csv" > "$D/articles_table.md"

# Cumulative FLOPs of the blocks (matmuls + attention) to generate up to T tokens from a
# one-token prompt. With the cache: the counted steps, summed. Without: the sum over
# every length t of a t-token recompute, by the closed form that the counted rows above
# match exactly (checked here): L·(24·t·C² + 4·C·t(t+1)/2).
awk -F, -v V="$V" $DIMS "$AWKLIB"'
FNR == 1 { f++; next }
f == 1 { sum += $5; cum[$4] = sum }
f == 2 { rl[$1] = $2; all[++na] = $1 }
f == 2 && ($1 == 10 || $1 == 100 || $1 == 1000) { Ts[++n] = $1 }
END {
    for (i = 1; i <= na; i++) {
        T = all[i]
        if (sprintf("%.0f", L * (24 * T * C * C + 2 * C * T * (T + 1))) != rl[T]) { print "lesson4: formula mismatch at T=" T > "/dev/stderr"; exit 1 }
    }
    print "| T | cumulative FLOPs with cache | without cache | ratio |"
    print "|---:|---:|---:|---:|"
    for (i = 1; i <= n; i++) {
        T = Ts[i]; r = 0
        for (t = 1; t <= T; t++) r += L * (24 * t * C * C + 2 * C * t * (t + 1))
        printf "| %d | %s | %s | %.1f× |\n", T, c3(cum[T]), c3(r), r / cum[T]
        printf "cum_ratio_%d,%.1f\ncum_cache_%d,%s\nprefill_layers_%d,%s\n", T, r / cum[T], T, c3(cum[T]), T, c3(rl[T]) >> V
    }
}' "$D/cache/flops.csv" "$D/recompute.csv" > "$D/cumulative.md"

# Bytes per FLOP of one decode step: every weight of the block and lm_head is read once
# and used for one multiply-add (2 FLOPs per 4 bytes), plus the K and V of all T tokens.
awk -F, -v V="$V" $DIMS "$AWKLIB"'
NR == 1 { next }
$1 == "decode" && ($4 == 100 || $4 == 1000) {
    T = $4
    w = L * (12 * C * C + 13 * C) + 2 * C + Vv * C          # block weights + ln_f + lm_head (= wte)
    wb = 4 * (w + 2 * C)                                    # + the wte and wpe rows of the new token
    kvb = 4 * 2 * L * T * C                                 # K and V of every cached token
    fl = $5 + $6 + $7
    printf "| decode step at T = %d | %s | %s | %s | %.2f |\n", T, c3(fl), c3(wb), c3(kvb), fl / (wb + kvb)
    printf "dec_intensity_%d,%.2f\n", T, fl / (wb + kvb) >> V
    if (T == 1000) printf "weights_bytes,%s\nweights_mib,%s\n", c3(wb), kib(wb) >> V
}' "$D/cache/flops.csv" > "$D/intensity.rows"
awk -F, -v V="$V" $DIMS "$AWKLIB"'
$1 == 1000 {
    T = $1
    w = L * (12 * C * C + 13 * C) + 2 * C + Vv * C
    wb = 4 * (w + 2 * C * T); kvb = 4 * 2 * L * T * C      # K and V written once, read in the block
    fl = $2 + $3 + $4
    printf "| prefill of T = %d tokens | %s | %s | %s | %.0f |\n", T, c3(fl), c3(wb), c3(kvb), fl / (wb + kvb)
    printf "pre_intensity_%d,%.0f\n", T, fl / (wb + kvb) >> V
}' "$D/recompute.csv" >> "$D/intensity.rows"
{ echo "| what | FLOPs of the whole step (counted) | weight bytes read | K/V bytes read | FLOPs per byte |"
  echo "|---|---:|---:|---:|---:|"
  cat "$D/intensity.rows"; } > "$D/intensity.md"
rm -f "$D/intensity.rows"

# Half-size weights (--weights fp16, bf16): the bytes a decode step reads, by the count
# above with the five matrices (the blocks' four and wte, the lm_head) at 2 bytes, and
# what rounding them once costs: the logits of a 16-token prompt and 15 greedy steps
# against float32 (max |Δlogit| over the steps whose greedy tokens still agree).
for w in fp32 fp16 bf16; do
    "$KV" run $MODEL_ARGS --weights $w --prompt-ids "$(ids 16)" --steps 15 --record logits,tokens \
        --out "$D/w_$w" --quiet
done
for w in fp16 bf16; do
    awk -F, -v w=$w 'FNR == 1 { f++; next }
        f == 1 { tok0[$1] = $3 } f == 2 { tok[$1] = $3 } f == 3 { l0[$2, $3] = $4 } f == 4 { l[$2, $3] = $4; n[$2]++ }
        END {
            same = 0; for (s = 1; (s in tok) && tok[s] == tok0[s]; s++) same++
            m = 0; for (s = 0; s <= same; s++) for (v = 0; v < n[s]; v++) {
                d = l[s, v] - l0[s, v]; if (d < 0) d = -d; if (d > m) m = d }
            printf "%s,%.3g,%d,%d\n", w, m, same, length(tok) - 1 }' \
        "$D/w_fp32/tokens.csv" "$D/w_$w/tokens.csv" "$D/w_fp32/logits.csv" "$D/w_$w/logits.csv"
done > "$D/weights.rows"
awk -F, -v V="$V" $DIMS "$AWKLIB"'
BEGIN {
    mats = L * 12 * C * C + Vv * C; rest = L * 13 * C + 2 * C + 2 * C  # biases, norms, the new token"s wpe row
    print "| weights | bytes a decode step reads (weights) | max \\|Δlogit\\| against fp32 | greedy tokens as with fp32 |"
    print "|---|---:|---:|---:|"
    printf "| fp32 | %s | — | — |\n", c3(4 * mats + 4 * rest)
    printf "weights_fp32_bytes,%s\nweights_half_bytes,%s\nweights_ratio,%.2f\n", c3(4 * mats + 4 * rest), c3(2 * mats + 4 * rest), (4 * mats + 4 * rest) / (2 * mats + 4 * rest) >> V
}
{ printf "| %s | %s | %s | %d of %d |\n", $1, c3(2 * mats + 4 * rest), $2, $3, $4
  printf "dlogit_%s,%s\nsame_tokens_%s,%d\n", $1, $2, $1, $3 >> V }' "$D/weights.rows" > "$D/weights.md"
rm -rf "$D/weights.rows" "$D/w_fp32" "$D/w_fp16" "$D/w_bf16"

# kipply: the K and V of a token cost 1/6 of its forward compute (c_attn's K and V
# columns are 4·C² of the 24·C² multiply-adds per token and layer).
awk -F, -v V="$V" 'NR == 2 { printf "kv_share,%.4f\n", ($5 * 2 / 3) / ($5 + $7 + $8) >> V }' "$D/recompute.csv"

# The chart of plots/flops.gp: per step and cumulative, counted, at every length.
awk -F, $DIMS '
FNR == 1 { f++; next }
f == 1 { sum += $5; cum[$4] = sum; step[$4] = $5 }
f == 2 { Ts[++n] = $1; rec[$1] = $2 }
END {
    print "T,flops_cache,flops_recompute,cum_flops_cache,cum_formula_recompute,L,C,prompt_tokens"
    for (i = 1; i <= n; i++) {
        T = Ts[i]; r = 0
        for (t = 1; t <= T; t++) r += L * (24 * t * C * C + 2 * C * t * (t + 1))
        printf "%d,%s,%s,%.0f,%.0f,%d,%d,1\n", T, step[T], rec[T], cum[T], r, L, C
    }
}' "$D/cache/flops.csv" "$D/recompute.csv" > "$D/flops_sweep.csv"
rm -rf "$D/cache"
chart flops "$P/flops" -e "in='$D/flops_sweep.csv'"
figure flops.png "FLOPs of one decode step (left) and of the whole generation (right), with and without the KV cache: the counted points sit on the closed-form lines, and the gap widens with T"

lesson_end 4
