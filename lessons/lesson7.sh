#!/bin/sh
# lesson7.sh — data and figures of lesson 7 (serving many sequences: a padded batch
# with and without its mask, the paged cache and three ways to reserve memory,
# prefix reuse).
#   sh lessons/lesson7.sh BIN      (what `make lesson7` runs)
# Writes data/lesson7/, plots/lesson7/, lessons/lesson7.md. The measured files
# (data/lesson7/*/timing.csv) are git-ignored; nothing the lesson shows comes from them.
. lessons/lib.sh
lesson_begin 7 "$@"

PROMPTS=lessons/lesson7.prompts
STEPS=40,12,28,20
V="$D/values.csv"
kv "$V" steps "$STEPS"
get() { awk -F, -v k="$2" '$1 == k { v = $2 } END { if (v == "") exit 1; print v }' "$1"; }

# One batch, three ways: padded + mask, padded without mask (the article), paged.
"$KV" batch $MODEL_ARGS --prompts "$PROMPTS" --steps "$STEPS" --out "$D/mask" --quiet > "$D/mask_console.txt"
"$KV" batch $MODEL_ARGS --prompts "$PROMPTS" --steps "$STEPS" --out "$D/nomask" --no-mask --quiet > "$D/nomask_console.txt"
"$KV" batch $MODEL_ARGS --prompts "$PROMPTS" --steps "$STEPS" --out "$D/paged" --paged --quiet > "$D/paged_console.txt"
# The exercises' answers.
"$KV" batch $MODEL_ARGS --prompts "$PROMPTS" --steps "$STEPS" --out "$D/paged4" --paged --block-size 4 --quiet > "$D/paged4_console.txt"
"$KV" batch --prompts "$PROMPTS" --steps "$STEPS" --out "$D/paged_ctx128" --paged --ctx 128 --quiet > "$D/paged_ctx128_console.txt"
rm -f "$D"/*/timing.csv   # measured: not part of the lesson

# The prompts: length, steps, padding slots after pad_kv_cache.
awk -F, -v steps="$STEPS" '
FNR == NR { text[FNR] = $0; next }
FNR > 1 && $1 == 0 { T[$2 + 1] = $3 + 1; if ($3 + 1 > W) W = $3 + 1; n++ }
END {
    split(steps, s, ",")
    print "| prompt | text | tokens T | decode steps | padding slots (T_max − T) |"
    print "|---:|---|---:|---:|---:|"
    for (i = 1; i <= n; i++) {
        t = text[i]; gsub(/\|/, "\\|", t)
        printf "| %d | `%s` | %d | %d | %d |\n", i, t, T[i], s[i], W - T[i]
    }
    printf "W0,%d\n", W > "/dev/stderr"
    sep = ""; short = ""
    for (i = 1; i <= n; i++) if (2 * T[i] < W) { short = short sep i; sep = ", " }
    printf "short_prompts,%s\n", short == "" ? "none" : short > "/dev/stderr"
}' "$PROMPTS" "$D/mask/diff.csv" > "$D/prompts.md" 2> "$D/w0.tmp"
kv "$V" W0 "$(sed -n 's/^W0,//p' "$D/w0.tmp")"
kv "$V" short_prompts "$(sed -n 's/^short_prompts,//p' "$D/w0.tmp")"
rm -f "$D/w0.tmp"

# Padding of the stacked cache, in KiB, and per-sequence damage without the mask.
awk -F, -v V="$V" "$AWKLIB"'
FNR == 1 { f++; next }
f == 1 && $1 == 0 { print "pad_stacked0," kib($6) >> V; print "pad_used0," kib($5) >> V; print "pad_pct0," $8 >> V }
f == 1 { last6 = $6; last5 = $5; last8 = $8 }
END { print "pad_stacked_end," kib(last6) >> V; print "pad_used_end," kib(last5) >> V; print "pad_pct_end," last8 >> V }
' "$D/mask/padding.csv"
awk -F, '
NR == 1 { next }
{ if ($5 + 0 > m[$2]) m[$2] = $5 + 0; if ($4 + 0 > d[$2]) d[$2] = $4 + 0; seen[$2] = 1 }
END {
    print "| prompt | max abs(Δlogit), no mask | max abs(Δ log p), no mask | with the mask |"
    print "|---:|---:|---:|---:|"
    for (b = 0; b in seen; b++) printf "| %d | %.3g | %.3g | 0 |\n", b + 1, d[b], m[b]
}' "$D/nomask/diff.csv" > "$D/nomask.md"

kv "$V" bs_minus1 $(($(get "$D/paged/summary.csv" block_size) - 1))
kv "$V" bpt_kib "$(awk -v b="$(get "$D/paged/summary.csv" bytes_per_token)" "BEGIN { print b / 1024 }")"
kv "$V" block_kib "$(awk -v b="$(get "$D/paged/summary.csv" block_bytes)" "BEGIN { print b / 1024 }")"
kv "$V" prefix_flops_fresh "$(awk "$AWKLIB"' BEGIN { print c3('"$(get "$D/paged/summary.csv" prefix_flops_fresh)"') }')"
kv "$V" prefix_flops_reuse "$(awk "$AWKLIB"' BEGIN { print c3('"$(get "$D/paged/summary.csv" prefix_flops_reuse)"') }')"

chart lesson7_padding "$P/padding" -e "in='$D/mask/padding.csv'"
LONGEST=$(awk -F, 'NR > 1 && $1 == 0 && $3 + 1 > m { m = $3 + 1; s = $2 + 1 } END { print s }' "$D/mask/diff.csv")
kv "$V" longest "$LONGEST"
chart lesson7_nomask "$P/nomask" -e "in='$D/nomask/diff.csv'; ok='$D/mask/diff.csv'; n=$(get "$D/mask/summary.csv" sequences); longest=$LONGEST"
chart lesson7_memory "$P/memory" -e "in='$D/paged/memory.csv'; pre='$(get "$D/paged/summary.csv" used_pct_prealloc)'; dbl='$(get "$D/paged/summary.csv" used_pct_doubling)'; pag='$(get "$D/paged/summary.csv" used_pct_paged)'; bs='$(get "$D/paged/summary.csv" block_size)'"
chart lesson7_blocks "$P/blocks" -e "in='$D/paged/blocks.csv'; bs=$(get "$D/paged/summary.csv" block_size); n=$(get "$D/paged/summary.csv" sequences); step=$(get "$D/paged/summary.csv" table_step)"
chart lesson7_prefix "$P/prefix" -e "in='$D/paged/prefix.csv'"

T=$(printf '\t')
cat > "$D/figures.tsv" <<TSV
padding.png${T}Padded batch: the shaded gap between the stacked tensor and the bytes holding tokens is padding, memory that holds nothing
nomask.png${T}Padding without an attention mask (the article's pad_kv_cache): every padded prompt's log-probabilities move, the unpadded one and every masked run stay at 0
memory.png${T}Three ways of reserving KV memory for one batch: paging follows the bytes holding tokens most closely (left), and holds tokens in the largest share of what it reserves (right)
blocks.png${T}The paged cache's block pool at one step: blocks of one prompt need not be neighbours, and a finished prompt's blocks go back to the pool
prefix.png${T}Prefix reuse: the second turn skips the prefix tokens' share of its prefill, because their K and V are already cached
TSV

lesson_end 7
