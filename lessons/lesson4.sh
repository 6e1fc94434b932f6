#!/bin/sh
# lesson4.sh — data and figures of lesson 4 (what the cache saves: FLOPs per step and
# cumulative, the articles' T = 10/100/1000 table next to the full count, bytes per FLOP).
#   sh lessons/lesson4.sh BIN [--model DIR]      (what `make lesson4` runs)
# Writes data/lesson4/, plots/lesson4/, lessons/lesson4.md. Measured times are not made
# here (they differ run to run): `make timing` writes data/measured/, which this lesson
# only includes.
. lessons/lib.sh
lesson_begin 4 "$@"
model_words > "$D/model.md"
model_words_zh > "$D/model.zh.md"
V="$D/values.csv"
# zh_table NAME HEADER [SED]: data/lesson4/NAME.zh.md, the Chinese-headed twin of a table
# this script built (NAME.md): the same rows under HEADER, their words rewritten by SED
zh_table() {
    { printf '%s\n' "$2"; tail -n +2 "$D/$1.md" | sed "${3:-}"; } > "$D/$1.zh.md"
}
ids() { awk -v n="$1" 'BEGIN { s = "0"; for (i = 1; i < n; i++) s = s "," (i % 256); print s }'; }

# The dimensions and the closed forms kvscope states for the model (kvscope info), with
# its weights in float32 and in halves.
for w in fp32 fp16 bf16; do "$KV" info $MODEL_ARGS --weights $w --prompt-ids 0 > "$D/info_$w.csv"; done
I="$D/info_fp32.csv"
kv "$V" C "$(value "$I" C)"
kv "$V" L "$(value "$I" L)"
kv "$V" Vv "$(value "$I" V)"
kv "$V" NH "$(value "$I" NH)"
kv "$V" hs "$(value "$I" hs)"
# GPT-2 small's full shape, where make timing measures half-size weights (timing.sh's
# GPT2_ARGS): its layers, vocabulary and float32 weight bytes.
"$KV" info --layers 12 --vocab 50257 --prompt-ids 0 > "$D/info_gpt2.csv"
kv "$V" gpt2_L "$(value "$D/info_gpt2.csv" L)"
kv "$V" gpt2_V "$(value "$D/info_gpt2.csv" V)"
kv "$V" gpt2_weights_mib "{{bytes $(value "$D/info_gpt2.csv" weight_bytes_decode)}}"

# One token of prompt, then decode to T = 1000, counting every step, with the cache and
# without it (every length recomputed from scratch): kvscope compare, which writes the
# counts by operation, the closed forms next to them, the bytes each step reads and its
# FLOPs per byte. Its timing files are measured: not part of the lesson.
LENGTHS=10,16,32,64,100,128,256,1000
"$KV" compare $MODEL_ARGS --prompt-ids 0 --lengths $LENGTHS --table-lengths none --decode-at 2 \
    --repeat 1 --out "$D/compare" --quiet
CMP="$D/compare/compare.csv"
"$KV" run $MODEL_ARGS --no-cache --prompt "人工智能是" --steps 8 --record none --out "$D/tmp" --html "$P/explorer_no_cache.html" --heads-shown 0-3 --quiet
rm -rf "$D/tmp"

# Without the cache, step T recomputes all T tokens: what a prefill of T tokens costs,
# by operation.
awk -F, "$AWKLIB"'
FNR == 1 { header(); print "T,flops_layers,flops_lm_head,flops_elementwise,flops_qkv,flops_attn,flops_attn_proj,flops_mlp"; next }
{ print col("T") "," col("flops_recompute") "," col("flops_lm_head_recompute") "," col("flops_elementwise_recompute") "," \
        col("flops_qkv_recompute") "," col("flops_attn_recompute") "," col("flops_attn_proj_recompute") "," col("flops_mlp_recompute") }' \
    "$CMP" > "$D/recompute.csv"
# the counted FLOPs are the closed form's, step by step (checked here)
awk -F, "$AWKLIB"'
FNR == 1 { header(); next }
col("flops_recompute") != col("formula_recompute") || col("flops_cache") != col("formula_cache") {
    print "lesson4: counted FLOPs differ from the closed form at T=" col("T") > "/dev/stderr"; exit 1 }' "$CMP"

# The articles' table (attention pairs only: T² without the cache, T with it) next to
# the engine's counts of the whole step: layers + lm_head + elementwise.
awk -F, -v V="$V" "$AWKLIB"'
FNR == 1 { header()
    print "| T | articles: without cache | articles: with cache | articles: ratio | counted attention FLOPs: without / with | ratio | counted FLOPs of the whole step: without cache | with cache | ratio |"
    print "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"; next }
col("T") == 10 || col("T") == 100 || col("T") == 1000 {
    T = col("T"); cache = col("flops_total_cache"); re = col("flops_total_recompute")
    cattn = col("flops_attn_cache"); rattn = col("flops_attn_recompute")
    printf "| %d | %s | %s | %d× | %s / %s | %.1f× | %s | %s | %.1f× |\n", T, digits(col("article_attn_recompute")),
        digits(col("article_attn_cache")), col("article_attn_recompute") / col("article_attn_cache"),
        digits(rattn), digits(cattn), rattn / cattn, digits(re), digits(cache), re / cache
    printf "ratio_%d,%.1f\nattn_ratio_%d,%.1f\ncache_%d,%s\nrecompute_%d,%s\n", T, re / cache, T, rattn / cattn, T, digits(cache), T, digits(re) >> V
    printf "attn_share_cache_%d,%.1f\n", T, 100 * cattn / cache >> V
    printf "layers_ratio_%d,%.1f\n", T, col("flops_recompute") / col("flops_cache") >> V
    printf "attn_share_recompute_%d,%.1f\n", T, 100 * rattn / re >> V
    if (T == 1000) {
        # outside the blocks: lm_head (the new token'"'"'s logits only, with or without the cache)
        # and the elementwise operations (layer norms, GELU, softmax, residuals: per token)
        lc = col("flops_lm_head_cache"); lr = col("flops_lm_head_recompute")
        ec = col("flops_elementwise_cache"); er = col("flops_elementwise_recompute")
        printf "lm_head_cache_1000,%s\nlm_head_recompute_1000,%s\nlm_head_equal,%d\n", digits(lc), digits(lr), lc == lr >> V
        printf "elem_cache_1000,%s\nelem_recompute_1000,%s\n", digits(ec), digits(er) >> V
        printf "outside_cache_1000,%.2f\noutside_recompute_1000,%.1f\noutside_ratio_1000,%.0f\n", (lc + ec) / 1e6, (lr + er) / 1e6, (lr + er) / (lc + ec) >> V
    }
}' "$CMP" > "$D/articles_table.md"

# Cumulative FLOPs of the blocks (matmuls + attention) to generate up to T tokens from a
# one-token prompt. With the cache: the counted steps, summed. Without: the sum over
# every length t of a t-token recompute, by the closed form (which the counted steps
# match: checked above).
awk -F, -v V="$V" "$AWKLIB"'
FNR == 1 { header()
    print "| T | cumulative FLOPs with cache | without cache | ratio |"
    print "|---:|---:|---:|---:|"; next }
col("T") == 10 || col("T") == 100 || col("T") == 1000 {
    T = col("T"); c = col("cum_flops_cache"); r = col("cum_formula_recompute")
    printf "| %d | %s | %s | %.1f× |\n", T, digits(c), digits(r), r / c
    printf "cum_ratio_%d,%.1f\ncum_cache_%d,%s\nprefill_layers_%d,%s\n", T, r / c, T, digits(c), T, digits(col("flops_recompute")) >> V
}' "$CMP" > "$D/cumulative.md"

# Bytes per FLOP: a step reads every weight once (model_weight_bytes_read) and the K and
# V of all T tokens; a decode step does one multiply-add per weight read.
awk -F, -v V="$V" "$AWKLIB"'
FNR == 1 { header(); next }
col("T") == 100 || col("T") == 1000 {
    T = col("T"); wb = col("weight_bytes_cache")
    printf "| decode step at T = %d | %s | %s | %s | %.2f |\n", T, digits(col("flops_total_cache")), digits(wb),
        digits(col("kv_bytes")), col("flops_per_byte_cache")
    printf "dec_intensity_%d,%.2f\n", T, col("flops_per_byte_cache") >> V
    if (T == 1000) printf "weights_bytes,%s\nweights_mib,%s\n", digits(wb), bytes(wb) >> V
}' "$CMP" > "$D/intensity.rows"
awk -F, -v V="$V" "$AWKLIB"'
FNR == 1 { header(); next }
col("T") == 1000 {
    T = col("T")
    printf "| prefill of T = %d tokens | %s | %s | %s | %.0f |\n", T, digits(col("flops_total_recompute")),
        digits(col("weight_bytes_recompute")), digits(col("kv_bytes")), col("flops_per_byte_recompute")
    printf "pre_intensity_%d,%.0f\n", T, col("flops_per_byte_recompute") >> V
    # a prefill reads the weights once, plus a wte row and a wpe row (C floats each) for
    # every token after the first: the decode step reads one of each
    printf "pre_extra_bytes,%s\npre_extra_raw,%.0f\npre_T,%d\n", digits(col("weight_bytes_recompute") - col("weight_bytes_cache")),
        col("weight_bytes_recompute") - col("weight_bytes_cache"), T >> V
}' "$CMP" >> "$D/intensity.rows"
{ echo "| what | FLOPs of the whole step (counted) | weight bytes read | K/V bytes read | FLOPs per byte |"
  echo "|---|---:|---:|---:|---:|"
  cat "$D/intensity.rows"; } > "$D/intensity.md"
rm -f "$D/intensity.rows"
claim "a prefill reads one wte and one wpe row per token more than a decode step" \
    "$(value "$V" pre_extra_raw) == ($(value "$V" pre_T) - 1) * 2 * $(value "$V" C) * 4"

# What the measured steps (data/measured/, make timing) did per second: the counted FLOPs
# and bytes of a step at the shortest and the longest measured length, over its median
# time, against this machine's FMA peak and read bandwidth (data/measured/roof.csv).
M=data/measured
TS=$(awk -F, 'NR == 2 { a = $1 } NR > 1 { b = $1 } END { print a "," b }' "$M/decode_time.csv")
"$KV" compare $MODEL_ARGS --prompt-ids 0 --lengths "$TS" --table-lengths none --decode-at 2 \
    --repeat 1 --out "$D/cmpm" --quiet
awk -F, -v V="$V" -v peak="$(value "$M/roof.csv" peak_gflops)" -v bw="$(value "$M/roof.csv" read_gbs)" "$AWKLIB"'
FNR == 1 { header(); f++; next }
f == 1 { tc[col("T")] = col("cache_median_s"); tr[col("T")] = col("recompute_median_s"); next }
{ T = col("T"); n++; t[n] = T; b[n] = col("weight_bytes_cache") + col("kv_bytes"); kvb[n] = col("kv_bytes")
  fc[n] = col("flops_total_cache"); fr[n] = col("flops_total_recompute") }
END {
    a = t[1]; z = t[n]
    printf "mt_first,%d\nmt_last,%d\n", a, z >> V
    printf "m_gflops_cache,%.1f\nm_gflops_recompute,%.1f\n", fc[n] / tc[z] / 1e9, fr[n] / tr[z] / 1e9 >> V
    printf "m_peak_share_cache,%.1f\nm_peak_share_recompute,%.0f\n", 100 * fc[n] / tc[z] / 1e9 / peak, 100 * fr[n] / tr[z] / 1e9 / peak >> V
    printf "m_mb_first,%.1f\nm_mb_last,%.1f\n", b[1] / 1e6, b[n] / 1e6 >> V
    printf "m_ms_first,%.2f\nm_ms_last,%.2f\n", 1e3 * tc[a], 1e3 * tc[z] >> V
    printf "m_gbs_first,%.1f\nm_gbs_last,%.1f\nm_bw,%s\n", b[1] / tc[a] / 1e9, b[n] / tc[z] / 1e9, bw >> V
    printf "m_bw_share_last,%.0f\n", 100 * b[n] / tc[z] / 1e9 / bw >> V
    g = b[1] / tc[a] / 1e9
    if (g > bw) printf "m_first_note,a little faster than the bandwidth: part of the weights stays in the processor'"'"'s cache between steps\nm_first_note_zh,比带宽略快：部分权重在两步之间留在了处理器的缓存里\n" >> V
    else printf "m_first_note,%.0f %% of the bandwidth\nm_first_note_zh,带宽的 %.0f %%\n", 100 * g / bw, 100 * g / bw >> V
    dk = kvb[n] - kvb[1]; dt = tc[z] - tc[a]
    printf "m_kv_extra_mb,%.1f\nm_kv_extra_ms,%.2f\nm_kv_extra_read_ms,%.2f\n", dk / 1e6, 1e3 * dt, 1e3 * dk / (bw * 1e9) >> V
}' "$M/decode_time.csv" "$D/cmpm/compare.csv"
rm -rf "$D/cmpm"
# what the text says of them: the cached step is far from the FMA peak, and at the longest
# length it reads below the bandwidth, its extra K/V taking far longer than reading them
claim "a cached step uses a few per cent of the FMA peak" "$(value "$V" m_peak_share_cache) < 10"
claim "the recomputed step computes many times faster per second than the cached one" \
    "$(value "$V" m_gflops_recompute) > 3 * $(value "$V" m_gflops_cache)"
claim "at the longest measured length the cached step reads below the bandwidth" "$(value "$V" m_bw_share_last) < 90"
claim "its extra K and V take longer than reading them would" "$(value "$V" m_kv_extra_ms) > 3 * $(value "$V" m_kv_extra_read_ms)"
claim "the shortest measured cached step reads at about the bandwidth or faster" "$(value "$V" m_gbs_first) > 0.8 * $(value "$V" m_bw)"

# Half-size weights (--weights fp16, bf16): the bytes a decode step reads (kvscope info:
# the five matrices, the blocks' four and wte, the lm_head, at 2 bytes), and what
# rounding them once costs: the logits of a 16-token prompt and 15 greedy steps against
# float32 (max |Δlogit| over the steps whose greedy tokens still agree).
for w in fp32 fp16 bf16; do
    "$KV" run $MODEL_ARGS --weights $w --prompt-ids "$(ids 16)" --steps 15 --record logits,tokens \
        --out "$D/w_$w" --quiet
done
for w in fp16 bf16; do
    awk -F, -v w=$w "$AWKLIB"'FNR == 1 { header(); f++; next }
        f == 1 { tok0[col("step")] = col("token_id") } f == 2 { tok[col("step")] = col("token_id") }
        f == 3 { l0[col("step"), col("token_id")] = col("logit") }
        f == 4 { l[col("step"), col("token_id")] = col("logit"); n[col("step")]++ }
        END {
            same = 0; for (s = 1; (s in tok) && tok[s] == tok0[s]; s++) same++
            m = 0; for (s = 0; s <= same; s++) for (v = 0; v < n[s]; v++) {
                d = l[s, v] - l0[s, v]; if (d < 0) d = -d; if (d > m) m = d }
            printf "%s,%.3g,%d,%d\n", w, m, same, length(tok) - 1 }' \
        "$D/w_fp32/tokens.csv" "$D/w_$w/tokens.csv" "$D/w_fp32/logits.csv" "$D/w_$w/logits.csv"
done > "$D/weights.rows"
B32=$(value "$D/info_fp32.csv" weight_bytes_decode)
B16=$(value "$D/info_fp16.csv" weight_bytes_decode)
awk -F, -v V="$V" -v b32="$B32" -v b16="$B16" -v bf16="$(value "$D/info_bf16.csv" weight_bytes_decode)" "$AWKLIB"'
BEGIN {
    half["fp16"] = b16; half["bf16"] = bf16
    print "| weights | bytes a decode step reads (weights) | max \\|Δlogit\\| against fp32 | greedy tokens as with fp32 |"
    print "|---|---:|---:|---:|"
    printf "| fp32 | %s | — | — |\n", digits(b32)
    printf "weights_fp32_bytes,%s\nweights_half_bytes,%s\nweights_ratio,%.2f\n", digits(b32), digits(b16), b32 / b16 >> V
}
{ printf "| %s | %s | %s | %d of %d |\n", $1, digits(half[$1]), $2, $3, $4
  printf "dlogit_%s,%s\nsame_tokens_%s,%d\n", $1, $2, $1, $3 >> V }' "$D/weights.rows" > "$D/weights.md"
rm -rf "$D/weights.rows" "$D/w_fp32" "$D/w_fp16" "$D/w_bf16"

# kipply: the K and V of a token cost 1/6 of its forward compute (c_attn's K and V
# columns are 4·C² of the 24·C² multiply-adds per token and layer).
claim "lm_head costs the same with or without the cache" "$(value "$V" lm_head_equal) == 1"
claim "outside the blocks the cache saves less than in them" "$(value "$V" outside_ratio_1000) < $(value "$V" layers_ratio_1000)"
kv "$V" kv_share "$(awk -v s="$(value "$I" kv_flops_share)" 'BEGIN { printf "%.4f", s }')"
rm -f "$D"/info_*.csv

# The Chinese lesson's tables: the same rows, headed (and labelled) in Chinese.
zh_table articles_table "| T | 文章：无缓存 | 文章：有缓存 | 文章：比值 | 计得的注意力 FLOPs：无缓存 / 有缓存 | 比值 | 计得的整步 FLOPs：无缓存 | 有缓存 | 比值 |"
zh_table cumulative "| T | 有缓存的累计 FLOPs | 无缓存 | 比值 |"
zh_table intensity "| 哪一步 | 整步 FLOPs（计得） | 读取的权重字节 | 读取的 K/V 字节 | 每字节 FLOPs |" \
    's/^| decode step at T = \([0-9]*\) |/| T = \1 时的一个解码步 |/; s/^| prefill of T = \([0-9]*\) tokens |/| 预填充 T = \1 个词元 |/'
zh_table weights "| 权重 | 一个解码步读取的字节（权重） | 与 fp32 相比的最大 \\|Δlogit\\| | 与 fp32 相同的贪心词元 |" \
    's/| \([0-9]*\) of \([0-9]*\) |$/| \1 \/ \2 |/'

# The chart of plots/flops.gp: per step and cumulative, counted, at every length.
awk -F, "$AWKLIB"'
FNR == 1 { header(); print "T,flops_cache,flops_recompute,formula_cache,formula_recompute,cum_flops_cache,cum_formula_cache,cum_formula_recompute,ratio,L,C,prompt_tokens"; next }
{ print col("T") "," col("flops_cache") "," col("flops_recompute") "," col("formula_cache") "," col("formula_recompute") "," \
        col("cum_flops_cache") "," col("cum_formula_cache") "," col("cum_formula_recompute") "," col("ratio") "," \
        col("L") "," col("C") "," col("prompt_tokens") }' "$CMP" > "$D/flops_sweep.csv"
rm -rf "$D/compare"
chart flops "$P/flops" -e "in='$D/flops_sweep.csv'"
figure flops.png "FLOPs of one decode step (left) and of the whole generation (right), with and without the KV cache: the counted points sit on the closed-form lines, and the gap widens with T" \
    "有无 KV 缓存时的浮点运算次数（FLOPs with and without the KV cache）。左图 one decode step：一个解码步的 FLOPs（L 个块）；右图 cumulative, up to T：生成到 T 为止的累计 FLOPs。横轴 sequence length T 是序列长度（词元数）；without cache 是无缓存（每步重算全部 T 个词元），with KV cache 是有缓存（每步只算 1 个新词元）。计得的点落在闭式公式的线上，两者的差距随 T 增大"

lesson_end 4
