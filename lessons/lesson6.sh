#!/bin/sh
# lesson6.sh — data and figures of lesson 6 (keeping the cache in budget: a memory cap,
# smaller storage types, a sliding window with sinks).
#   sh lessons/lesson6.sh BIN      (what `make lesson6` runs)
# Writes data/lesson6/, plots/lesson6/, lessons/lesson6.md and lessons/zh/lesson6.md (every
# sentence written here has a Chinese twin, *.zh.md or a key ending in _zh, chosen by the
# same condition from the same numbers).
. lessons/lib.sh
lesson_begin 6 "$@"

PROMPT="The KV cache"
CAP_MB=0.25
SHORT=32
S=4
V="$D/values.csv"
kv "$V" model_args "$MODEL_ARGS"
model_words > "$D/model.md"
model_words_zh > "$D/model.zh.md"
# The long run fills the context; the window keeps half of it.
"$KV" info $MODEL_ARGS --prompt "$PROMPT" > "$D/info.csv"
NCTX=$(value "$D/info.csv" N)
LONG=$((NCTX - $(value "$D/info.csv" prompt_tokens)))
W=$((NCTX / 2))
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
# the two storage-type tables in Chinese, for lessons/zh/lesson6.md: the same rows under a
# Chinese header; "yes (33 of 33)" is the greedy choice agreeing with fp32's at 33 of 33 steps
for run in short long; do
    sed -E '1s/.* after ([0-9]+) tokens .*/| KV 存储类型 | 每个数的字节 | 每个词元的字节 | \1 个词元之后的 KV 字节 | 最大 \\|Δlogit\\| | 平均 \\|Δlogit\\| | 贪心选择与 fp32 相同 |/
        s/\| yes \(([0-9]+) of ([0-9]+)\) \|$/| 是（\2 步中 \1 步相同） |/
        s/\| no \(([0-9]+) of ([0-9]+)\) \|$/| 否（\2 步中只有 \1 步相同） |/' "$D/$run/dtypes.md" > "$D/dtypes_$run.zh.md"
done
grep -v '^wrote ' "$D/short_console.txt" > "$D/short_console.tmp" && mv "$D/short_console.tmp" "$D/short_console.txt"
# int8 and q8_0: the same groups when a head has 32 numbers; which errs less, measured.
HSZ=$("$KV" info $MODEL_ARGS --prompt "$PROMPT" | awk -F, '$1 == "hs" { print $2 }')
kv "$V" hs $HSZ
for run in short long; do
    awk -v a="$(value "$D/$run/summary.csv" max_dlogit_int8)" -v b="$(value "$D/$run/summary.csv" max_dlogit_q8_0)" \
        -v n="$(value "$D/$run/summary.csv" steps)" \
        -v en="$D/q8_$run.txt" -v zh="$D/q8_$run.zh.txt" 'BEGIN {
        v = (a < b) ? "int8 errs less" : ((a > b) ? "q8_0 errs less" : "the two err alike")
        z = (a < b) ? "int8 误差更小" : ((a > b) ? "q8_0 误差更小" : "两者误差相同")
        printf "over %d steps %s (int8 %s, q8_0 %s)", n, v, a, b > en
        printf "在 %d 步上，%s（int8 %s，q8_0 %s）", n, z, a, b > zh }'
done
# Which one errs less, in each run: when the winner changes with the run length, the gap is
# rounding noise (the same groups, scales a half-precision rounding apart), not a better type.
W8=$(for run in short long; do awk -v a="$(value "$D/$run/summary.csv" max_dlogit_int8)" \
    -v b="$(value "$D/$run/summary.csv" max_dlogit_q8_0)" 'BEGIN { print (a < b) ? "int8" : ((a > b) ? "q8_0" : "tie") }'; done | paste -sd' ' -)
case "$W8" in
"int8 q8_0"|"q8_0 int8")
    kv "$V" q8_noise ": which one errs less changes with the run length. The two round the same values with scales that differ only by the fp16 scale's own rounding, so their results part only where a value lies near a rounding boundary: the gap is rounding noise, not a better type"
    kv "$V" q8_noise_zh "：哪一个误差更小随运行长度而变。两者用同样的分组，缩放因子只差 fp16 缩放因子自身的那一点舍入，所以只有恰好落在舍入边界附近的数会被舍入到不同的整数：两者的差距是舍入噪声，而不是哪种类型更好" ;;
*)
    kv "$V" q8_noise ""
    kv "$V" q8_noise_zh "" ;;
esac
kv "$V" q8_short "$(cat "$D/q8_short.txt")"
kv "$V" q8_long "$(cat "$D/q8_long.txt")"
kv "$V" q8_short_zh "$(cat "$D/q8_short.zh.txt")"
kv "$V" q8_long_zh "$(cat "$D/q8_long.zh.txt")"
rm -f "$D/q8_short.txt" "$D/q8_long.txt" "$D/q8_short.zh.txt" "$D/q8_long.zh.txt"
claim "int8's groups (one per token and head) are q8_0's blocks of 32 values" "$HSZ == 32"
kv "$V" bf16_over_fp16 "$(awk -v a="$(value "$D/short/summary.csv" max_dlogit_fp16)" \
    -v b="$(value "$D/short/summary.csv" max_dlogit_bf16)" 'BEGIN { printf "%.0f", b / a }')"

chart lesson6_bytes_error "$P/bytes_vs_error" \
    -e "short='$D/short/dtypes.csv'; long='$D/long/dtypes.csv'; nshort='$SHORT steps'; nlong='$LONG steps'"
chart lesson6_window_growth "$P/window_growth" -e "in='$D/long/window.csv'; nosink='$D/nosink/window.csv'; W=$W; S=$S"
figure bytes_vs_error.png "Every storage type against fp32: halving the bytes (fp16, bf16) or quartering them (int8, q8_0) costs logit error, and bf16 errs more than fp16 for the same bytes" \
    "每种存储类型与 fp32 缓存对比（标题：KV 缓存越小，logit 误差越大）：左图是每个词元（token）的 K 和 V 在所有层（layer）共占多少字节，右图是与 fp32 相比的最大和平均 |Δlogit|（对数坐标），分别在 $SHORT 步和 $LONG 步上测得。字节减半（fp16、bf16）或减到约四分之一（int8、q8_0）都要付出 logit 误差；字节相同时，bf16 的误差比 fp16 大"
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
# The prompt on its own line, then only what each cache generated after it, a space shown
# as ␣ (so that a continuation of spaces is seen, not a blank line).
{
    printf '%-21s %s\n' "the prompt:" "$REPEAT_PROMPT"
    printf '%-21s %s\n' "a copy would write:" "$(printf '%s' "$COPY_WANT" | sed 's/ /␣/g')"
    # the same lines with Chinese labels, for lessons/zh/lesson6.md (twins.sh compares what
    # follows each label)
    { label_zh "提示词：" 25; printf '%s\n' "$REPEAT_PROMPT"
      label_zh "应当复制出：" 25; printf '%s\n' "$(printf '%s' "$COPY_WANT" | sed 's/ /␣/g')"; } > "$D/window_texts.zh.txt"
    for w in full big small; do
        t=$(generated "$D/g_$w")
        case $w in full) lbl="the full cache:" ;; big) lbl="window $WBIG, $S sinks:" ;; small) lbl="window $WSMALL, $S sinks:" ;; esac
        printf '%-21s %s\n' "$lbl" "$(printf '%s' "$t" | sed 's/ /␣/g')"
        case $w in full) lbl="完整缓存：" ;; big) lbl="窗口 $WBIG，$S 个汇聚位置：" ;; small) lbl="窗口 $WSMALL，$S 个汇聚位置：" ;; esac
        { label_zh "$lbl" 25; printf '%s\n' "$(printf '%s' "$t" | sed 's/ /␣/g')"; } >> "$D/window_texts.zh.txt"
        kv "$V" copied_$w "$(copied "$t" "$COPY_WANT")"
        kv "$V" spaces_$w "$(printf '%s' "$t" | tr -cd ' ' | wc -c | tr -d ' ')"
    done
} > "$D/window_texts.txt"
kv "$V" wbig_recent $((WBIG - S))
kv "$V" wsmall_recent $((WSMALL - S))
claim "the window that holds the copy has W - S at least the distance, the other not" "$WBIG - $S >= $DIST && $WSMALL - $S < $DIST"
rm -rf "$D/g_full" "$D/g_big" "$D/g_small"
# One sentence on the three lines, chosen by the counts (the issue's bars: 90 % and 20 %).
awk -v f="$(value "$V" copied_full)" -v b="$(value "$V" copied_big)" -v s="$(value "$V" copied_small)" \
    -v n="$(value "$V" copy_len)" -v en="$D/window_verdict.md" -v zh="$D/window_verdict.zh.md" 'BEGIN {
    if (b >= 0.9 * n && s <= 0.2 * n) {
        print "The window that still holds the first copy copies it; the window whose W − S is shorter than the distance does not." > en
        print "仍然装得下第一遍原文的窗口复制出了它；W − S 比这段距离短的窗口则复制不出来。" > zh
    } else if (f < 0.9 * n) {
        printf "This model does not copy the sentence even with the full cache (%d of %d bytes), so no window can show what it takes away; lesson 8 measures copying where only copying helps.\n", f, n > en
        printf "这个模型即使用完整缓存也没有复制这句话（%d 个字节里只复制对 %d 个），所以任何窗口都显示不出它拿走了什么；第 8 课在只有复制才有用的地方测量复制。\n", n, f > zh
    } else {
        printf "The full cache copies (%d of %d bytes); the window that holds the first copy %d, the shorter one %d.\n", f, n, b, s > en
        printf "完整缓存复制出了 %d 个字节中的 %d 个；装得下第一遍原文的窗口复制对 %d 个，较短的窗口复制对 %d 个。\n", n, f, b, s > zh
    }
}'
claim "the window shorter than the distance repeats at most a fifth of the first copy" \
    "$(value "$V" copied_small) <= 0.2 * $(value "$V" copy_len)"

# Sinks or none for the same W tokens, in words the numbers choose.
awk -v a="$(value "$D/long/summary.csv" window_mean_dlogit)" -v b="$(value "$D/nosink/summary.csv" window_mean_dlogit)" -v s=$S \
    -v en="$D/sink_verdict.txt" -v zh="$D/sink_verdict.zh.txt" 'BEGIN {
    if (a < b) { printf "with %d sinks kept the mean |Δlogit| is lower than with none (%s against %s)", s, a, b > en
                 printf "保留 %d 个汇聚位置时，平均 |Δlogit| 比一个都不保留时低（%s 对 %s）", s, a, b > zh }
    else { printf "here keeping %d sinks does not lower the mean |Δlogit| (%s against %s without them)", s, a, b > en
           printf "这里保留 %d 个汇聚位置并没有降低平均 |Δlogit|（%s，不保留时为 %s）", s, a, b > zh } }'
kv "$V" sink_verdict "$(cat "$D/sink_verdict.txt")"
kv "$V" sink_verdict_zh "$(cat "$D/sink_verdict.zh.txt")"
rm -f "$D/sink_verdict.txt" "$D/sink_verdict.zh.txt"
figure window_growth.png "A window of $W tokens: memory stops growing (top), the logits drift from the full cache's (bottom), with $S sinks kept and with none for the same $W tokens" \
    "W = $W 个词元（token）的滑动窗口（sliding window）：上图纵轴是 KV 缓存的大小（MiB），窗口的内存到 W 个词元后不再增长；下图纵轴是与完整缓存相比的最大 |Δlogit|，横轴是序列中的词元数：从那以后 logits 开始偏离完整缓存，一条保留 $S 个汇聚位置（attention sink），一条在同样 $W 个词元内一个都不保留"

# 5. Sinks measured StreamingLLM's way: the loss at every position of a text four windows
# long (Genesis 1:1-10, King James Version, cut to the context) with the full cache, a
# window that keeps the start byte and one of the same size that evicts it.
cat > "$D/genesis.txt" << 'TEXT'
In the beginning God created the heaven and the earth. And the earth was without form, and void; and darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters. And God said, Let there be light: and there was light. And God saw the light, that it was good: and God divided the light from the darkness. And God called the light Day, and the darkness he called Night. And the evening and the morning were the first day. And God said, Let there be a firmament in the midst of the waters, and let it divide the waters from the waters.
TEXT
LW=$((NCTX / 4))
kv "$V" loss_window $LW
"$KV" loss $MODEL_ARGS --text "$D/genesis.txt" --window $LW --sink 1 --out "$D/loss" --plots "$P/loss" --quiet
mv "$P/loss/loss.png" "$P/sinks_loss.png"; mv "$P/loss/loss.svg" "$P/sinks_loss.svg"; rm -rf "$P/loss"
awk -F, -v V="$V" "$AWKLIB"'FNR == 1 { header(); next }
    { printf "loss_%s,%.3f\n", col("cache"), col("mean_bits_past_window") >> V }' "$D/loss/loss_means.csv"
# The same comparison on every text of lessons/lesson6.texts (a rule, not a choice: the
# first chapter of the first eight books), so that the lesson can say how often keeping the
# start byte helps, and by how much.
grep -v '^#' lessons/lesson6.texts | while IFS= read -r text; do
    printf '%s\n' "$text" > "$D/text.txt"
    "$KV" loss $MODEL_ARGS --text "$D/text.txt" --window $LW --sink 1 --out "$D/tloss" --quiet
    awk -F, "$AWKLIB"'FNR == 1 { header(); next } { m[col("cache")] = col("mean_bits_past_window") }
        END { printf "%s,%s,%s\n", m["full"], m["sinks"], m["evict"] }' "$D/tloss/loss_means.csv"
    rm -rf "$D/tloss" "$D/text.txt"
done > "$D/texts_loss.csv"
awk -F, -v V="$V" '{ n++; g = $3 - $2; s += g; if (n == 1 || g < lo) lo = g; if (n == 1 || g > hi) hi = g
        if ($2 < $3) better++; d = $2 - $1; if (n == 1 || d > dmax) dmax = d }
    END { printf "texts_n,%d\ntexts_better,%d\ntexts_gap_mean,%.2f\ntexts_gap_min,%.2f\ntexts_gap_max,%.2f\ntexts_sinks_vs_full_max,%.2f\n",
          n, better, s / n, lo, hi, dmax >> V }' "$D/texts_loss.csv"
rm -f "$D/texts_loss.csv"
claim "keeping the start token predicts every text better than evicting it" \
    "$(value "$V" texts_better) == $(value "$V" texts_n) && $(value "$V" texts_n) >= 8"
kv "$V" loss_gap "$(awk -v k="$(value "$V" loss_sinks)" -v e="$(value "$V" loss_evict)" 'BEGIN { printf "%.2f", e - k }')"
kv "$V" genesis_bytes "$(($(wc -c < "$D/genesis.txt") - 1))"
kv "$V" nctx "$NCTX"
awk -v k="$(value "$V" loss_sinks)" -v e="$(value "$V" loss_evict)" \
    -v en="$D/sinks_loss_verdict.md" -v zh="$D/sinks_loss_verdict.zh.md" 'BEGIN {
    if (k < e) { printf "The window that keeps the start token predicts the text better than the one that evicts it: %.3f bits per byte past the window against %.3f.\n", k, e > en
                 printf "保留起始词元的窗口比驱逐它的窗口预测得更准：在超出窗口长度的位置上每字节 %.3f 比特，后者为 %.3f 比特。\n", k, e > zh }
    else { printf "Here keeping the start token does not help: %.3f bits per byte past the window against %.3f for the window that evicts it.\n", k, e > en
           printf "这里保留起始词元并没有帮助：在超出窗口长度的位置上每字节 %.3f 比特，驱逐它的窗口为 %.3f 比特。\n", k, e > zh } }'
figure sinks_loss.png "The loss at every position of a text four windows long: the full cache, a window of $LW that keeps the start token, and one of $LW that evicts it" \
    "一段长达四个窗口的文本上每个位置（position）的损失：横轴是文本中的位置（词元），纵轴是损失（每词元比特数，8 个位置的平均）；三条曲线分别是完整缓存、保留起始词元的 $LW 词元窗口，以及同样大小但驱逐起始词元的窗口"

# 6. What K and V hold, channel by channel, and how int8 should group them: the same text
# through the fp32 cache, then with K and V read back through int8 grouped per token or per
# channel, against the fp32 logits (kvscope kvvalues: the numbers; the scripts draw).
"$KV" kvvalues $MODEL_ARGS --text "$D/genesis.txt" --out "$D/kv" --quiet
KVS="$D/kv/summary.csv"
KVL=$(value "$KVS" layers)
kv "$V" kv_positions "$(value "$KVS" positions)"
chart lesson6_kv_int8 "$P/kv_int8" -e "in='$D/kv/groups.csv'"
# The outlier table: per layer, the largest channel's max |x| over the median channel's.
{
    printf '| layer | K: largest channel ÷ median channel (max \\|x\\|) | its channel | V: largest ÷ median | its channel |\n|---:|---:|---:|---:|---:|\n'
    l=0
    while [ $l -lt "$KVL" ]; do
        printf '| %d | %s× | %s | %s× | %s |\n' $l "$(value "$KVS" outlier_k_l$l)" "$(value "$KVS" top_k_l$l)" \
            "$(value "$KVS" outlier_v_l$l)" "$(value "$KVS" top_v_l$l)"
        l=$((l + 1))
    done
} > "$D/kv_outliers.md"
# The same rows and numbers under Chinese headers.
{
    printf '| 层 | K：最大通道 ÷ 中位数通道（最大 \\|x\\|） | 所在通道 | V：最大 ÷ 中位数 | 所在通道 |\n|---:|---:|---:|---:|---:|\n'
    tail -n +3 "$D/kv_outliers.md"
} > "$D/kv_outliers.zh.md"
# An outlier channel, in this lesson's words: max |x| at least OUTLIER times the median
# channel's (a threshold of the lesson, not of a paper).
OUTLIER=4
kv "$V" outlier_threshold $OUTLIER
chart lesson6_kv_channels "$P/kv_channels" -e "in='$D/kv/channels.csv'; L=$KVL; npos=$(value "$KVS" positions); outlier=$OUTLIER"
KMAX=$(awk -F, '$1 ~ /^outlier_k_l/ && $2 > m { m = $2 } END { print m }' "$KVS")
VMAX=$(awk -F, '$1 ~ /^outlier_v_l/ && $2 > m { m = $2 } END { print m }' "$KVS")
kv "$V" outlier_k_max "$KMAX"
kv "$V" outlier_v_max "$VMAX"
claim "every curve of kv_channels.png starts under the ${OUTLIER}× line" "$KMAX < $OUTLIER && $VMAX < $OUTLIER"
awk -v k="$KMAX" -v v="$VMAX" -v t=$OUTLIER -v en="$D/kv_outlier_verdict.md" -v zh="$D/kv_outlier_verdict.zh.md" 'BEGIN {
    if (k < t) { printf "No layer of this model has an outlier key channel: the largest reaches %s× the max |x| of the median channel (values: %s×), under the %d× this lesson calls an outlier. The figure shows it: what was measured is every channel of every layer over the text.\n", k, v, t > en
                 printf "这个模型没有哪一层有离群（outlier）的键通道：最大的也只是中位数通道最大 |x| 的 %s 倍（值为 %s 倍），不到本课所说的离群标准 %d 倍。图中可以看到这一点：测量的是整段文本上每一层的每一个通道。\n", k, v, t > zh }
    else { printf "Keys have outlier channels here: one reaches %s× the max |x| of the median channel (values at most %s×; the lesson calls %d× an outlier).\n", k, v, t > en
           printf "这里的键有离群（outlier）通道：其中一个达到中位数通道最大 |x| 的 %s 倍（值最多 %s 倍；本课把 %d 倍以上称为离群）。\n", k, v, t > zh } }'
{
    printf '| K grouped per | V grouped per | max \\|Δlogit\\| | RMS Δlogit |\n|---|---|---:|---:|\n'
    awk -F, "$AWKLIB"'FNR == 1 { header(); next }
        { printf "| %s | %s | %s | %s |\n", col("k_group"), col("v_group"), col("max_abs_dlogit"), col("rms_dlogit") }' "$D/kv/groups.csv"
} > "$D/kv_groups.md"
# 词元 = token, 通道 = channel: the same rows and numbers in Chinese words.
{
    printf '| K 的分组 | V 的分组 | 最大 \\|Δlogit\\| | Δlogit 的 RMS |\n|---|---|---:|---:|\n'
    awk -F, "$AWKLIB"'function w(g) { return g == "token" ? "按词元" : (g == "channel" ? "按通道" : g) }
        FNR == 1 { header(); next }
        { printf "| %s | %s | %s | %s |\n", w(col("k_group")), w(col("v_group")), col("max_abs_dlogit"), col("rms_dlogit") }' "$D/kv/groups.csv"
} > "$D/kv_groups.zh.md"
# Which grouping errs least, in words the numbers choose.
awk -F, -v k="$KMAX" -v t=$OUTLIER -v zh="$D/kv_groups_verdict.zh.md" "$AWKLIB"'function w(g) { return g == "token" ? "词元" : (g == "channel" ? "通道" : g) }
    FNR == 1 { header(); next } {
        g = "K per " col("k_group") ", V per " col("v_group"); r = col("rms_dlogit") + 0; m = col("max_abs_dlogit") + 0
        gz = "K 按" w(col("k_group")) "、V 按" w(col("v_group"))
        if (!nr || r < rbest) { rbest = r; rg = g; rgz = gz }
        if (!nr || m < mbest) { mbest = m; mg = g; mgz = gz }
        if (!nr || r > rworst) rworst = r
        if (col("k_group") == "channel" && col("v_group") == "token") kivi = r
        nr++ }
    END {
        if (rg == "K per channel, V per token" && mg == rg) {
            printf "This model agrees with KIVI: keys per channel and values per token give both the lowest RMS and the lowest max |Δlogit|.\n"
            printf "这个模型印证了 KIVI 的选择：键按通道、值按词元分组，RMS 和最大 |Δlogit| 都是最低的。\n" > zh }
        else {
            printf "This model does not make KIVI'"'"'s case: the lowest RMS comes from %s (%s), the lowest max |Δlogit| from %s (%s); KIVI'"'"'s grouping gives an RMS of %s, and the largest of the four RMS values, %s, is only %.1f %% above the smallest (%s / %s = %.3f).%s\n", rg, rbest, mg, mbest, kivi, rworst, 100 * (rworst - rbest) / rbest, rworst, rbest, rworst / rbest, (k < t ? " On this model, whose channels are alike, the grouping hardly matters at 8 bits." : "")
            printf "这个模型并不支持 KIVI 的选择：RMS 最低的是“%s”（%s），最大 |Δlogit| 最低的是“%s”（%s）；KIVI 的分组 RMS 为 %s，四个 RMS 值中最大的 %s 只比最小的高 %.1f %%（%s / %s = %.3f）。%s\n", rgz, rbest, mgz, mbest, kivi, rworst, 100 * (rworst - rbest) / rbest, rworst, rbest, rworst / rbest, (k < t ? "这个模型的各个通道大小相近，在 8 比特下怎样分组几乎无关紧要。" : "") > zh }
    }' "$D/kv/groups.csv" > "$D/kv_groups_verdict.md"
KV_RMS_WORST=$(awk -F, "$AWKLIB"'FNR == 1 { header(); next } col("rms_dlogit") > m { m = col("rms_dlogit") } END { print m }' "$D/kv/groups.csv")
claim "every int8 grouping keeps the RMS of Δlogit under 0.05" "$KV_RMS_WORST < 0.05"
figure kv_channels.png "Outlier channels? Each K and V channel's largest |value| over $(value "$KVS" positions) positions, divided by the median channel's, sorted: every layer stays under the ${OUTLIER}× line" \
    "有没有离群通道？键（K）和值（V）的每个通道在 $(value "$KVS" positions) 个位置上的最大 |值| 除以中位数通道的，从大到小排开：每一层都在 ${OUTLIER}× 那条线以下"
figure kv_int8.png "int8 K and V grouped per token or per channel: max and RMS of Δlogit against fp32, KIVI's choice in orange" \
    "int8 缓存的 K 和 V 按词元（token）或按通道（channel）分组，在 $(value "$KVS" positions) 个位置上与 fp32 相比的 logit 误差：四根柱子是四种分组（横轴标签 K: / V: 分别写出键和值的分组，token 即按词元，channel 即按通道），左图纵轴是最大 |Δlogit|，右图纵轴是 Δlogit 的均方根（RMS），单位都是 logit；橙色是 KIVI 的选择（键按通道、值按词元）"

lesson_end 6
