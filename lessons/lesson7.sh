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
kv "$V" model_args "$MODEL_ARGS"
model_words > "$D/model.md"

# One batch, three ways: padded + mask, padded without mask (the article), paged.
"$KV" batch $MODEL_ARGS --prompts "$PROMPTS" --steps "$STEPS" --out "$D/mask" --quiet > "$D/mask_console.txt"
"$KV" batch $MODEL_ARGS --prompts "$PROMPTS" --steps "$STEPS" --out "$D/nomask" --no-mask --quiet > "$D/nomask_console.txt"
"$KV" batch $MODEL_ARGS --prompts "$PROMPTS" --steps "$STEPS" --out "$D/paged" --paged --quiet > "$D/paged_console.txt"
# The exercises' answers.
"$KV" batch $MODEL_ARGS --prompts "$PROMPTS" --steps "$STEPS" --out "$D/paged4" --paged --block-size 4 --quiet > "$D/paged4_console.txt"
"$KV" batch --prompts "$PROMPTS" --steps "$STEPS" --out "$D/paged_ctx128" --paged --ctx 128 --quiet > "$D/paged_ctx128_console.txt"
rm -f "$D"/*/timing.csv   # measured: not part of the lesson

# The prompts: length, steps, padding slots after pad_kv_cache.
awk -F, -v steps="$STEPS" "$AWKLIB"'
FNR == NR { text[FNR] = $0; next }
FNR == 1 { header(); next }
col("step") == 0 { t = col("pos") + 1; T[col("seq") + 1] = t; if (t > W) W = t; n++ }
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
FNR == 1 { header(); next }
col("step") == 0 { print "pad_stacked0," bytes(col("bytes_stacked")) >> V; print "pad_used0," bytes(col("bytes_used")) >> V
                   print "pad_pct0," col("padding_pct") >> V }
{ stacked = col("bytes_stacked"); used = col("bytes_used"); pct = col("padding_pct") }
END { print "pad_stacked_end," bytes(stacked) >> V; print "pad_used_end," bytes(used) >> V; print "pad_pct_end," pct >> V }
' "$D/mask/padding.csv"
awk -F, "$AWKLIB"'
FNR == 1 { header(); next }
{ b = col("seq"); lp = col("max_abs_dlogprob") + 0; dl = col("max_abs_diff") + 0
  if (lp > m[b]) m[b] = lp; if (dl > d[b]) d[b] = dl; seen[b] = 1 }
END {
    print "| prompt | max abs(Δlogit), no mask | max abs(Δ log p), no mask | with the mask |"
    print "|---:|---:|---:|---:|"
    for (b = 0; b in seen; b++) printf "| %d | %.3g | %.3g | 0 |\n", b + 1, d[b], m[b]
}' "$D/nomask/diff.csv" > "$D/nomask.md"
# What the table shows about padding and damage, as a sentence: whether the rows move in
# the order of their padding (slots T_max − T, from the prefill rows of mask/diff.csv).
awk -F, "$AWKLIB"'
FNR == 1 { header(); next }
FILENAME == ARGV[1] && col("step") == 0 { t = col("pos") + 1; b = col("seq"); if (t > T[b]) T[b] = t; if (t > W) W = t; next }
FILENAME == ARGV[2] { b = col("seq"); lp = col("max_abs_dlogprob") + 0; if (lp > m[b]) m[b] = lp }
END {
    mp = -1; mm = -1; mono = 1
    for (b in T) { pad[b] = W - T[b]; if (pad[b] == 0) continue
        if (mp < 0 || pad[b] > pad[mp]) mp = b
        if (mm < 0 || m[b] > m[mm]) mm = b }
    for (a in T) for (b in T) if (pad[a] > pad[b] && pad[b] > 0 && m[a] < m[b]) mono = 0
    if (mono)
        printf "the more padding a row has, the further it moves: prompt %d, with the most padding (%d slots), moves furthest (%.3g nats)\n", mp + 1, pad[mp], m[mp]
    else if (mm != mp)
        printf "how far a row moves does not follow how much padding it has: prompt %d has the most padding (%d slots) and moves %.3g nats, while prompt %d, with %d slots, moves furthest (%.3g nats)\n", mp + 1, pad[mp], m[mp], mm + 1, pad[mm], m[mm]
    else
        printf "prompt %d, with the most padding (%d slots), moves furthest (%.3g nats), but the other rows do not move in the order of their padding\n", mp + 1, pad[mp], m[mp]
}' "$D/mask/diff.csv" "$D/nomask/diff.csv" > "$D/order.tmp"
kv "$V" nomask_order "$(cat "$D/order.tmp")"
rm -f "$D/order.tmp"

kv "$V" bs_minus1 $(($(value "$D/paged/summary.csv" block_size) - 1))
kv "$V" bpt_kib "{{kib $(value "$D/paged/summary.csv" bytes_per_token)}}"
kv "$V" block_kib "{{kib $(value "$D/paged/summary.csv" block_bytes)}}"
kv "$V" prefix_flops_fresh "{{digits $(value "$D/paged/summary.csv" prefix_flops_fresh)}}"
kv "$V" prefix_flops_reuse "{{digits $(value "$D/paged/summary.csv" prefix_flops_reuse)}}"
# Our reservations against the PagedAttention paper's (Kwon et al. 2023, Fig. 2): earlier
# systems held tokens in 20.4 % to 38.2 % of their KV memory, vLLM in 96.3 %.
kv "$V" prealloc_vs_paper "$(awk -v p="$(value "$D/paged/summary.csv" used_pct_prealloc)" 'BEGIN {
    print p < 20.4 ? "below even the 20.4 % they measured" : p <= 38.2 ? "within the 20.4 % to 38.2 % they measured" : "above the 38.2 % they measured" }')"
kv "$V" paged_vs_paper "$(awk -v p="$(value "$D/paged/summary.csv" used_pct_paged)" 'BEGIN {
    print p < 96.3 ? "lower than their 96.3 %" : "at or above their 96.3 % all the same" }')"

chart lesson7_padding "$P/padding" -e "in='$D/mask/padding.csv'"
LONGEST=$(awk -F, "$AWKLIB"'FNR == 1 { header(); next }
    col("step") == 0 && col("pos") + 1 > m { m = col("pos") + 1; s = col("seq") + 1 } END { print s }' "$D/mask/diff.csv")
kv "$V" longest "$LONGEST"
chart lesson7_nomask "$P/nomask" -e "in='$D/nomask/diff.csv'; ok='$D/mask/diff.csv'; n=$(value "$D/mask/summary.csv" sequences); longest=$LONGEST"
chart lesson7_memory "$P/memory" -e "in='$D/paged/memory.csv'; pre='$(value "$D/paged/summary.csv" used_pct_prealloc)'; dbl='$(value "$D/paged/summary.csv" used_pct_doubling)'; pag='$(value "$D/paged/summary.csv" used_pct_paged)'; bs='$(value "$D/paged/summary.csv" block_size)'"
chart lesson7_blocks "$P/blocks" -e "in='$D/paged/blocks.csv'; bs=$(value "$D/paged/summary.csv" block_size); n=$(value "$D/paged/summary.csv" sequences); step=$(value "$D/paged/summary.csv" table_step)"
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
