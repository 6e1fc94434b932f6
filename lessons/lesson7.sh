#!/bin/sh
# lesson7.sh — data and figures of lesson 7 (serving many sequences: a padded batch
# with and without its mask, the paged cache and three ways to reserve memory,
# prefix reuse).
#   sh lessons/lesson7.sh BIN      (what `make lesson7` runs)
# Writes data/lesson7/, plots/lesson7/, lessons/lesson7.md and lessons/zh/lesson7.md (each
# sentence and table written here has a Chinese twin, *.zh.md or a key ending in _zh, made
# under the same condition from the same numbers). The measured files
# (data/lesson7/*/timing.csv) are git-ignored; nothing the lesson shows comes from them.
. lessons/lib.sh
lesson_begin 7 "$@"

PROMPTS=lessons/lesson7.prompts
STEPS=40,12,28,20
V="$D/values.csv"
kv "$V" steps "$STEPS"
kv "$V" model_args "$MODEL_ARGS"
model_words > "$D/model.md"
model_words_zh > "$D/model.zh.md"

# One batch, three ways: padded + mask, padded without mask (the article), paged.
"$KV" batch $MODEL_ARGS --prompts "$PROMPTS" --steps "$STEPS" --out "$D/mask" --quiet > "$D/mask_console.txt"
# Without the mask batch exits 1 because the logits differ: that is the point here.
st=0
"$KV" batch $MODEL_ARGS --prompts "$PROMPTS" --steps "$STEPS" --out "$D/nomask" --no-mask --quiet > "$D/nomask_console.txt" || st=$?
if [ $st -ne 1 ]; then echo "lesson7: batch --no-mask exited $st, expected 1" >&2; exit 1; fi
"$KV" batch $MODEL_ARGS --prompts "$PROMPTS" --steps "$STEPS" --out "$D/paged" --paged --quiet > "$D/paged_console.txt"
# its table of the three ways to reserve, in Chinese, for lessons/zh/lesson7.md
sed -E '1s/.*/| 策略 | 预留多少 | 存放词元的字节 \/ 预留的字节 |/
    s/^\| preallocate \| the context \(([0-9]+) tokens\) per sequence \|/| 预分配 | 每个序列预留整个上下文（\1 个词元） |/
    s/^\| grow by doubling \| 16, 32, 64, \.\.\. tokens per sequence \|/| 倍增 | 每个序列依次 16、32、64……个词元 |/
    s/^\| paged \| one block of ([0-9]+) tokens at a time \|/| 分页 | 每次一个块（\1 个词元） |/' "$D/paged/memory.md" > "$D/memory.zh.md"
if grep -q '[a-z] [a-z]' "$D/memory.zh.md"; then echo "lesson7: memory.md has a row memory.zh.md does not translate" >&2; exit 1; fi
# The exercises' answers.
"$KV" batch $MODEL_ARGS --prompts "$PROMPTS" --steps "$STEPS" --out "$D/paged4" --paged --block-size 4 --quiet > "$D/paged4_console.txt"
"$KV" batch --prompts "$PROMPTS" --steps "$STEPS" --out "$D/paged_ctx128" --paged --ctx 128 --quiet > "$D/paged_ctx128_console.txt"
# The same built-in model at its own context: doubling and paging do not depend on the
# context (only preallocation does), which the exercise's answer says.
"$KV" batch --prompts "$PROMPTS" --steps "$STEPS" --out "$D/paged_builtin" --paged --quiet > "$D/paged_builtin_console.txt"
for s in used_pct_doubling used_pct_paged; do
    kv "$D/builtin.csv" "$s" "$(value "$D/paged_builtin/summary.csv" $s)"
    claim "doubling and paging do not depend on the context ($s)" \
        "$(value "$D/paged_builtin/summary.csv" $s) == $(value "$D/paged_ctx128/summary.csv" $s)"
done
kv "$D/builtin.csv" used_pct_prealloc "$(value "$D/paged_builtin/summary.csv" used_pct_prealloc)"
kv "$D/builtin.csv" ctx "$(value "$D/paged_builtin/summary.csv" context)"
rm -rf "$D/paged_builtin" "$D/paged_builtin_console.txt"
rm -f "$D"/*/timing.csv   # measured: not part of the lesson

# The prompts: length, steps, padding slots after pad_kv_cache.
awk -F, -v steps="$STEPS" -v zh="$D/prompts.zh.md" "$AWKLIB"'
FNR == NR { text[FNR] = $0; next }
FNR == 1 { header(); next }
col("step") == 0 { t = col("pos") + 1; T[col("seq") + 1] = t; if (t > W) W = t; n++ }
END {
    split(steps, s, ",")
    print "| prompt | text | tokens T | decode steps | padding slots (T_max − T) |"
    print "|---:|---|---:|---:|---:|"
    print "| 提示词 | 文本 | 词元数 T | 解码步数 | 填充槽位（T_max − T） |" > zh
    print "|---:|---|---:|---:|---:|" > zh
    for (i = 1; i <= n; i++) {
        t = text[i]; gsub(/\|/, "\\|", t)
        printf "| %d | `%s` | %d | %d | %d |\n", i, t, T[i], s[i], W - T[i]
        printf "| %d | `%s` | %d | %d | %d |\n", i, t, T[i], s[i], W - T[i] > zh
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
awk -F, -v zh="$D/nomask.zh.md" "$AWKLIB"'
FNR == 1 { header(); next }
{ b = col("seq"); lp = col("max_abs_dlogprob") + 0; dl = col("max_abs_diff") + 0
  if (lp > m[b]) m[b] = lp; if (dl > d[b]) d[b] = dl; seen[b] = 1 }
END {
    print "| prompt | max abs(Δlogit), no mask | max abs(Δ log p), no mask | with the mask |"
    print "|---:|---:|---:|---:|"
    print "| 提示词 | 最大 abs(Δlogit)，无掩码 | 最大 abs(Δ log p)，无掩码 | 有掩码 |" > zh
    print "|---:|---:|---:|---:|" > zh
    for (b = 0; b in seen; b++) {
        printf "| %d | %.3g | %.3g | 0 |\n", b + 1, d[b], m[b]
        printf "| %d | %.3g | %.3g | 0 |\n", b + 1, d[b], m[b] > zh
    }
}' "$D/nomask/diff.csv" > "$D/nomask.md"
# What the table shows about padding and damage, as a sentence: whether the rows move in
# the order of their padding (slots T_max − T, from the prefill rows of mask/diff.csv).
awk -F, -v zh="$D/order.zh.tmp" "$AWKLIB"'
FNR == 1 { header(); next }
FILENAME == ARGV[1] && col("step") == 0 { t = col("pos") + 1; b = col("seq"); if (t > T[b]) T[b] = t; if (t > W) W = t; next }
FILENAME == ARGV[2] { b = col("seq"); lp = col("max_abs_dlogprob") + 0; if (lp > m[b]) m[b] = lp }
END {
    mp = -1; mm = -1; mono = 1
    for (b in T) { pad[b] = W - T[b]; if (pad[b] == 0) continue
        if (mp < 0 || pad[b] > pad[mp]) mp = b
        if (mm < 0 || m[b] > m[mm]) mm = b }
    for (a in T) for (b in T) if (pad[a] > pad[b] && pad[b] > 0 && m[a] < m[b]) mono = 0
    if (mono) {
        printf "the more padding a row has, the further it moves: prompt %d, with the most padding (%d slots), moves furthest (%.3g nats)\n", mp + 1, pad[mp], m[mp]
        printf "填充越多的行偏移越大：填充最多（%d 个槽位）的提示词 %d 偏移最大（%.3g 奈特）\n", pad[mp], mp + 1, m[mp] > zh
    } else if (mm != mp) {
        printf "how far a row moves does not follow how much padding it has: prompt %d has the most padding (%d slots) and moves %.3g nats, while prompt %d, with %d slots, moves furthest (%.3g nats)\n", mp + 1, pad[mp], m[mp], mm + 1, pad[mm], m[mm]
        printf "一行偏移多少并不跟着它的填充多少走：提示词 %d 的填充最多（%d 个槽位），偏移 %.3g 奈特；而只有 %d 个槽位的提示词 %d 偏移最大（%.3g 奈特）\n", mp + 1, pad[mp], m[mp], pad[mm], mm + 1, m[mm] > zh
    } else {
        printf "prompt %d, with the most padding (%d slots), moves furthest (%.3g nats), but the other rows do not move in the order of their padding\n", mp + 1, pad[mp], m[mp]
        printf "填充最多（%d 个槽位）的提示词 %d 偏移最大（%.3g 奈特），但其余几行的偏移并不按填充多少排序\n", pad[mp], mp + 1, m[mp] > zh
    }
}' "$D/mask/diff.csv" "$D/nomask/diff.csv" > "$D/order.tmp"
kv "$V" nomask_order "$(cat "$D/order.tmp")"
kv "$V" nomask_order_zh "$(cat "$D/order.zh.tmp")"
rm -f "$D/order.tmp" "$D/order.zh.tmp"

kv "$V" bs_minus1 $(($(value "$D/paged/summary.csv" block_size) - 1))
kv "$V" bpt_kib "{{kib $(value "$D/paged/summary.csv" bytes_per_token)}}"
kv "$V" block_kib "{{kib $(value "$D/paged/summary.csv" block_bytes)}}"
kv "$V" prefix_flops_fresh "{{digits $(value "$D/paged/summary.csv" prefix_flops_fresh)}}"
kv "$V" prefix_flops_reuse "{{digits $(value "$D/paged/summary.csv" prefix_flops_reuse)}}"
# Our reservations against the PagedAttention paper's (Kwon et al. 2023, Fig. 2): earlier
# systems held tokens in 20.4 % to 38.2 % of their KV memory, vLLM in 96.3 %. Their shares
# add up to 100 % of the memory, holes included: waste.csv's denominator, not the reserved bytes.
PRE_ALL=$(awk -F, "$AWKLIB"'FNR == 1 { header(); next } col("strategy") == "preallocate" { printf "%.1f", col("pct_tokens") }' "$D/paged/waste.csv")
kv "$V" prealloc_all_pct "$PRE_ALL"
kv "$V" prealloc_vs_paper "$(awk -v p="$PRE_ALL" 'BEGIN {
    print p < 20.4 ? "just below even the lowest they measured (20.4 %)" : p <= 38.2 ? "within the 20.4 % to 38.2 % they measured" : "above the 38.2 % they measured" }')"
kv "$V" paged_vs_paper "$(awk -v p="$(value "$D/paged/summary.csv" used_pct_paged)" 'BEGIN {
    print p < 96.3 ? "lower than their 96.3 %" : "at or above their 96.3 % all the same" }')"
kv "$V" prealloc_vs_paper_zh "$(awk -v p="$PRE_ALL" 'BEGIN {
    print p < 20.4 ? "甚至略低于他们测得的最低值（20.4 %）" : p <= 38.2 ? "落在他们测得的 20.4 % 到 38.2 % 之间" : "高于他们测得的 38.2 %" }')"
kv "$V" paged_vs_paper_zh "$(awk -v p="$(value "$D/paged/summary.csv" used_pct_paged)" 'BEGIN {
    print p < 96.3 ? "低于他们的 96.3 %" : "仍然达到或超过他们的 96.3 %" }')"

chart lesson7_padding "$P/padding" -e "in='$D/mask/padding.csv'"
LONGEST=$(awk -F, "$AWKLIB"'FNR == 1 { header(); next }
    col("step") == 0 && col("pos") + 1 > m { m = col("pos") + 1; s = col("seq") + 1 } END { print s }' "$D/mask/diff.csv")
kv "$V" longest "$LONGEST"
chart lesson7_nomask "$P/nomask" -e "in='$D/nomask/diff.csv'; ok='$D/mask/diff.csv'; n=$(value "$D/mask/summary.csv" sequences); longest=$LONGEST"
chart lesson7_memory "$P/memory" -e "in='$D/paged/memory.csv'; pre='$(value "$D/paged/summary.csv" used_pct_prealloc)'; dbl='$(value "$D/paged/summary.csv" used_pct_doubling)'; pag='$(value "$D/paged/summary.csv" used_pct_paged)'; bs='$(value "$D/paged/summary.csv" block_size)'"
chart lesson7_blocks "$P/blocks" -e "in='$D/paged/blocks.csv'; bs=$(value "$D/paged/summary.csv" block_size); n=$(value "$D/paged/summary.csv" sequences); step=$(value "$D/paged/summary.csv" table_step)"
chart lesson7_prefix "$P/prefix" -e "in='$D/paged/prefix.csv'"
# Where each way's memory goes over the run (waste.csv), and the block tables of the
# prefix pair drawn with sharing and copy on write.
S7="$D/paged/summary.csv"
chart lesson7_waste "$P/waste" -e "in='$D/paged/waste.csv'; first=$(($(value "$S7" prefix_first) + 1)); second=$(($(value "$S7" prefix_second) + 1)); prefix=$(value "$S7" prefix_tokens); more=$(value "$S7" prefix_new_tokens); bs=$(value "$S7" block_size)"
awk -F, -v zh="$D/waste.zh.md" "$AWKLIB"'
BEGIN { name["preallocate"] = "预分配（preallocate）"; name["doubling"] = "倍增（doubling）"; name["paged"] = "分页（paged）" }
FNR == 1 { header()
    print "| strategy | holds tokens | reserved for tokens to come | internal fragmentation | external fragmentation |"
    print "|---|---:|---:|---:|---:|"
    print "| 策略 | 存放词元 | 为将来的词元预留 | 内部碎片 | 外部碎片 |" > zh
    print "|---|---:|---:|---:|---:|" > zh; next }
{ s = col("strategy"); z = (s in name) ? name[s] : s
  printf "| %s | %.1f %% | %.1f %% | %.1f %% | %.1f %% |\n", s, col("pct_tokens"), col("pct_reservation"),
         col("pct_internal"), col("pct_external")
  printf "| %s | %.1f %% | %.1f %% | %.1f %% | %.1f %% |\n", z, col("pct_tokens"), col("pct_reservation"),
         col("pct_internal"), col("pct_external") > zh }' "$D/paged/waste.csv" > "$D/waste.md"
# The two tables' "holds tokens" have different denominators: the first divides by the bytes
# reserved, waste.csv by all the memory a way spans, its holes (external fragmentation)
# included. Said with both numbers, and checked: without the holes, waste.csv gives back the
# first table's share.
awk -F, -v V="$V" "$AWKLIB"'FNR == 1 { header(); next }
{ s = col("strategy"); t = col("bytes_tokens"); r = t + col("bytes_reservation") + col("bytes_internal")
  printf "waste_%s_reserved_pct,%.1f\nwaste_%s_tokens_pct,%.1f\nwaste_%s_external_pct,%.1f\n", s, 100 * t / r, s, col("pct_tokens"), s, col("pct_external") >> V }' "$D/paged/waste.csv"
for s in preallocate:prealloc doubling:doubling paged:paged; do
    claim "waste.csv's ${s%%:*} share of the bytes reserved is the first table's" \
        "$(value "$V" "waste_${s%%:*}_reserved_pct") == $(value "$D/paged/summary.csv" "used_pct_${s#*:}")"
done
claim "only the contiguous ways have external fragmentation" \
    "$(value "$V" waste_paged_external_pct) == 0 && $(value "$V" waste_preallocate_external_pct) > 0"

T=$(printf '\t')
cat > "$D/figures.tsv" <<TSV
padding.png${T}Padded batch: the shaded gap between the stacked tensor and the bytes holding tokens is padding, memory that holds nothing
nomask.png${T}Padding without an attention mask (the article's pad_kv_cache): every padded prompt's log-probabilities move, the unpadded one and every masked run stay at 0
memory.png${T}Three ways of reserving KV memory for one batch: paging follows the bytes holding tokens most closely (left), and holds tokens in the largest share of what it reserves (right)
blocks.png${T}The paged cache's block pool at one step: blocks of one prompt need not be neighbours, and a finished prompt's blocks go back to the pool
waste.png${T}Where a serving cache's memory goes on these prompts (left: tokens, reservation, internal and external fragmentation per way of reserving), and the block table that would let prompt 3 share prompt 1's full blocks and copy the partial one on write (right)
prefix.png${T}Prefix reuse: the second turn skips the prefix tokens' share of its prefill, because their K and V are already cached
TSV
cat > "$D/figures.zh.tsv" <<TSV
padding.png${T}填充（padding）后的批处理（batch）：横轴是解码步（0 为预填充之后），纵轴是 KV 缓存的字节数（KiB）；堆叠张量（B × 最长提示词）与存放词元的字节之间的阴影差距就是填充，是什么也不存的内存
nomask.png${T}没有注意力掩码（mask）的填充（文章的 pad_kv_cache）：横轴是解码步（0 为预填充），纵轴是与单独运行相比的最大 |Δ log p|（奈特）；每个被填充的提示词的对数概率都偏移了，没有填充的那个和所有带掩码的运行都停在 0
memory.png${T}为同一个批处理预留 KV 内存的三种方式：左图是每步预留的字节（KiB），分页最贴近存放词元的字节；右图是存放词元的字节占预留字节的比例（%），分页的比例最高
blocks.png${T}分页（paged）缓存在某一步的块（block）池：横轴是块在池中的编号，柱高是块中存放词元的槽位比例；同一提示词的块不必相邻，已结束的提示词的块回到池中
waste.png${T}服务缓存的内存都去了哪里（左：每种预留方式在整个运行中的内存构成，依次为存放词元、为将来的词元预留、内部碎片和外部碎片，单位 %），以及让提示词 3 共享提示词 1 的完整块、并在写入时复制最后那个未满块的块表（右）
prefix.png${T}前缀复用（prefix reuse）：横轴是提示词预填充的浮点运算次数（FLOPs，×10^9）；第二轮对话跳过了前缀词元那部分预填充，因为它们的 K 和 V 已经在缓存里
TSV

lesson_end 7
