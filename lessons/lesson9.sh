#!/bin/sh
# lesson9.sh — data and figures of lesson 9 (which tokens to keep: the window with sinks,
# H2O, SnapKV and an oracle side by side, the weight they lose, copying kept or lost, and one
# quality-per-byte frontier over every KV lever).
#   sh lessons/lesson9.sh BIN [--model DIR]      (what `make lesson9` runs)
# One `kvscope frontier` run on the corpus's validation split (build/corpus/kjv.txt, made by
# `make corpus`) writes data/lesson9/frontier/; everything below reads its files. Each
# sentence and table written here has a Chinese twin (*.zh.md) made from the same numbers.
. lessons/lib.sh
lesson_begin 9 "$@"

V="$D/values.csv"
F="$D/frontier"
CORPUS=build/corpus/kjv.txt
[ -f "$CORPUS" ] || { echo "lesson9: no corpus at $CORPUS (run make corpus)" >&2; exit 2; }
K=64 # the budget the side-by-side figure shows
kv "$V" model_args "$MODEL_ARGS"
model_words > "$D/model.md"
model_words_zh > "$D/model.zh.md"

"$KV" frontier $MODEL_ARGS --corpus "$CORPUS" --out "$F" --quiet
for k in texts tokens prompt predictions_per_text copies copy_example_prompt heads layers head_size sinks obs_window pool; do
    kv "$V" $k "$(value "$F/summary.csv" $k)"
done
T=$(value "$V" tokens)
PR=$(value "$V" prompt)
NT=$(value "$V" texts)
kv "$V" predictions $((NT * $(value "$V" predictions_per_text)))
kv "$V" decoded $((T - PR))
kv "$V" copy_len $((T - $(value "$V" copy_example_prompt)))
kv "$V" K $K
kv "$V" recent $((K / 2))
heads_total=$(( $(value "$V" heads) * $(value "$V" layers) ))
kv "$V" heads_total $heads_total

# 1. The frontier: every lever, one row; the same table for the twin.
awk -F, -v zh="$D/frontier.zh.md" "$AWKLIB"'FNR == 1 { header(); next }
{   lv = col("lever"); lab = col("label")
    what = lv == "full" ? "full cache (fp32)" : lv == "precision" ? "storage " lab : lv == "evict" ? "eviction " lab : "K/V heads pooled, " lab
    wz = lv == "full" ? "完整缓存（fp32）" : lv == "precision" ? "存储类型 " lab : lv == "evict" ? "驱逐 " lab : "K/V 头合并，" lab
    row = sprintf("| %.0f | %.2g | %.3f | %.3f |", col("bytes_per_token"), col("kl_bits"), col("top1"), col("bits_per_byte"))
    body = body "| " what " " row "\n"; bz = bz "| " wz " " row "\n" }
END {
    printf "| lever | KV bytes per token | mean KL (bits) | top-1 agreement | bits per byte |\n|---|---:|---:|---:|---:|\n%s", body
    printf "| 手段 | 每词元 KV 字节数 | 平均 KL（比特） | top-1 一致率 | 每字节比特数 |\n|---|---:|---:|---:|---:|\n%s", bz > zh
}' "$F/frontier.csv" > "$D/frontier.md"
# the numbers the text quotes, by label
awk -F, -v V="$V" "$AWKLIB"'FNR == 1 { header(); next }
{ l = col("label"); gsub(/[ =+]/, "_", l)
  printf "kl_%s,%.2g\ntop1_%s,%.3f\nbpb_%s,%.3f\nbytes_%s,%.0f\n", l, col("kl_bits"), l, col("top1"), l, col("bits_per_byte"), l, col("bytes_per_token") >> V
  raw[l] = col("kl_bits") }
END { printf "rot_gain_q4_0,%.0f\n", 100 * (1 - raw["q4_0_rot"] / raw["q4_0"]) >> V }' "$F/frontier.csv"

# 2. How often, text by text: of the NT texts, in how many does a policy beat another.
awk -F, -v V="$V" "$AWKLIB"'FNR == 1 { header(); next }
{ kl[col("text"), col("label")] = col("kl_bits") + 0; if (col("text") + 1 > n) n = col("text") + 1 }
END {
    split("32 64 128", B, " ")
    for (b = 1; b <= 3; b++) {
        k = B[b]; h = 0; s = 0; o = 0
        for (t = 0; t < n; t++) {
            w = kl[t, "window K=" k]; hh = kl[t, "h2o K=" k]; sn = kl[t, "snapkv K=" k]; or = kl[t, "oracle K=" k]
            if (hh < w) h++
            if (sn < w) s++
            best = w; if (hh < best) best = hh; if (sn < best) best = sn
            if (or < best) o++
        }
        printf "h2o_beats_window_%d,%d\nsnap_beats_window_%d,%d\noracle_beats_all_%d,%d\n", k, h, k, s, k, o >> V
    }
    r = 0
    for (t = 0; t < n; t++) if (kl[t, "q4_0+rot"] < kl[t, "q4_0"]) r++
    printf "rot_helps_texts,%d\n", r >> V
}' "$F/texts.csv"

# 3. Attention weight lost, per policy and budget: mean, least and most over the heads.
awk -F, "$AWKLIB"'FNR == 1 { header(); next }
{ k = col("policy") "," col("budget"); m = col("mass_lost") + 0; s[k] += m; c[k]++
  if (!(k in lo) || m < lo[k]) lo[k] = m; if (!(k in hi) || m > hi[k]) hi[k] = m; if (!(k in seen)) { seen[k] = 1; order[++n] = k } }
END { print "policy,budget,mean,min,max"; for (i = 1; i <= n; i++) { k = order[i]; printf "%s,%.4f,%.4f,%.4f\n", k, s[k] / c[k], lo[k], hi[k] } }' \
    "$F/mass.csv" > "$D/mass_summary.csv"
awk -F, -v V="$V" -v zh="$D/mass.zh.md" "$AWKLIB"'FNR == 1 { header(); next }
{ p = col("policy"); b = col("budget"); m[p, b] = col("mean"); lo[p, b] = col("min"); hi[p, b] = col("max")
  printf "mass_%s_%d,%.2f\nmassmax_%s_%d,%.2f\n", p, b, col("mean"), p, b, col("max") >> V }
END {
    split("window h2o snapkv oracle", P, " "); split("window + sinks|H2O|SnapKV|oracle", N, "|"); split("窗口 + sink|H2O|SnapKV|oracle（上界）", NZ, "|")
    print "| policy | K = 32 | K = 64 | K = 128 |\n|---|---:|---:|---:|"
    print "| 策略 | K = 32 | K = 64 | K = 128 |\n|---|---:|---:|---:|" > zh
    for (i = 1; i <= 4; i++) {
        r = ""; for (b = 32; b <= 128; b *= 2) r = r sprintf(" %.2f (%.2f–%.2f) |", m[P[i], b], lo[P[i], b], hi[P[i], b])
        print "| " N[i] " |" r; print "| " NZ[i] " |" r > zh
    }
}' "$D/mass_summary.csv" > "$D/mass.md"

# 4. Copying: per policy and budget, the share of the repeat predicted right, and how many
# copy texts each keeps within 0.05 of the full cache.
awk -F, -v V="$V" "$AWKLIB"'FNR == 1 { header(); next }
{ t = col("text"); l = col("label"); c[t, l] = col("copied") + 0; if (t + 1 > n) n = t + 1; if (!(l in seen)) { seen[l] = 1; L[++nl] = l } }
END {
    for (i = 1; i <= nl; i++) { l = L[i]; k = 0; lost = 0
        for (t = 0; t < n; t++) { if (c[t, l] >= c[t, "full"] - 0.05) k++; if (c[t, l] < c[t, "full"] - 0.2) lost++ }
        g = l; gsub(/[ =+]/, "_", g); printf "kept_%s,%d\nlost_%s,%d\n", g, k, g, lost >> V }
    printf "copy_texts,%d\n", n >> V
}' "$F/copy_texts.csv"
awk -F, -v V="$V" "$AWKLIB"'FNR == 1 { header(); next }
{ l = col("label"); gsub(/[ =+]/, "_", l); printf "copied_%s,%.2f\ncbpb_%s,%.2f\n", l, col("copied"), l, col("bits_per_byte") >> V }' "$F/copy.csv"
printf '%s' "$(cat "$F/copy_example.txt")" | sed 's/|/\\|/g' > "$D/copy_line.md"

# 5. Heavy hitters: power law or not, and how concentrated.
awk -F, -v V="$V" -v T=$T "$AWKLIB"'FNR == 1 { header(); f++; next }
f == 1 { n++; if (col("r2_exp") > col("r2_power")) e++; s[n] = col("slope"); rp += col("r2_power"); re += col("r2_exp"); next }
{ a = col("accumulated"); tot += a; if (col("rank") <= T / 10) top += a; if (col("rank") == 1) first += a }
END { for (i = 1; i <= n; i++) for (j = i; j > 1 && s[j] < s[j - 1]; j--) { x = s[j]; s[j] = s[j - 1]; s[j - 1] = x }
      printf "heavy_heads,%d\nheavy_exp_better,%d\nheavy_r2_power,%.2f\nheavy_r2_exp,%.2f\nheavy_slope_median,%.2f\nheavy_top10,%.0f\nheavy_first,%.0f\nheavy_topn,%d\n", \
          n, e, rp / n, re / n, s[int((n + 1) / 2)], 100 * top / tot, 100 * first / tot, int(T / 10) >> V }' "$F/heavy_fit.csv" "$F/heavy.csv"

# 6. Why the rotation helps, or here does not: q4_0 error of each layer's K and V.
awk -F, -v V="$V" -v zh="$D/rotation.zh.md" "$AWKLIB"'FNR == 1 { header(); next }
col("dtype") == "q4_0" || col("dtype") == "int8" { k = col("tensor") "," col("dtype") "," col("rotate"); e[k] += col("rel_error"); p[k] += col("block_peak"); c[k]++ }
END {
    split("K V K_outlier", X, " "); split("K|V|K with one channel × 16 per head", N, "|"); split("K|V|每个头一个通道 × 16 的 K", NZ, "|")
    print "| tensor | block max / rms, plain → rotated | q4_0 relative error, plain → rotated | int8 relative error, plain → rotated |\n|---|---:|---:|---:|"
    print "| 张量 | 块内最大值 / 均方根，原始 → 旋转 | q4_0 相对误差，原始 → 旋转 | int8 相对误差，原始 → 旋转 |\n|---|---:|---:|---:|" > zh
    for (i = 1; i <= 3; i++) { t = X[i]
        r = sprintf(" %.2f → %.2f | %.3f → %.3f | %.4f → %.4f |", p[t ",q4_0,0"] / c[t ",q4_0,0"], p[t ",q4_0,1"] / c[t ",q4_0,1"],
            e[t ",q4_0,0"] / c[t ",q4_0,0"], e[t ",q4_0,1"] / c[t ",q4_0,1"], e[t ",int8,0"] / c[t ",int8,0"], e[t ",int8,1"] / c[t ",int8,1"])
        print "| " N[i] " |" r; print "| " NZ[i] " |" r > zh
        printf "qerr_%s,%.3f\nqerr_rot_%s,%.3f\npeak_%s,%.2f\npeak_rot_%s,%.2f\n", t, e[t ",q4_0,0"] / c[t ",q4_0,0"], t, e[t ",q4_0,1"] / c[t ",q4_0,1"], \
            t, p[t ",q4_0,0"] / c[t ",q4_0,0"], t, p[t ",q4_0,1"] / c[t ",q4_0,1"] >> V }
}' "$F/rotation.csv" > "$D/rotation.md"

# The layer the side-by-side figure shows: the one where the window loses the most weight
# at budget K; kept.csv cut to that layer and budget (the whole file is 24 heads × 12 levers).
SHOW_L=$(awk -F, -v K=$K "$AWKLIB"'FNR == 1 { header(); next } col("policy") == "window" && col("budget") == K { s[col("layer")] += col("mass_lost") }
    END { b = -1; for (l in s) if (s[l] > b) { b = s[l]; bl = l }; print bl }' "$F/mass.csv")
kv "$V" show_layer $SHOW_L
awk -F, -v K=$K -v L=$SHOW_L 'NR == 1 || ($2 == K && $3 == L)' "$F/kept.csv" > "$F/kept.tmp" && mv "$F/kept.tmp" "$F/kept.csv"
# what the figure shows, counted: of the positions the full cache's last query weighs ≥ 5 %
# in that layer, how many each policy kept
awk -F, -v V="$V" "$AWKLIB"'FNR == 1 { header(); next } col("weight") >= 0.05 { n[col("policy")]++; k[col("policy")] += col("kept") }
    END { for (p in n) printf "looked_%s,%d\nlooked_kept_%s,%d\n", p, n[p], p, k[p] >> V }' "$F/kept.csv"

# H2O's older kept cells in that figure: how many lie in the first half of the text.
awk -F, -v V="$V" -v R=$((K / 2)) -v T=$T "$AWKLIB"'FNR == 1 { header(); next }
    col("policy") == "h2o" && col("kept") == 1 { p = col("position") + 0; if (p > last) last = p; kp[++n] = p }
    END { for (i = 1; i <= n; i++) if (kp[i] <= last - R) { old++; if (kp[i] < T / 2) first++ }
          printf "h2o_old,%d\nh2o_old_first,%d\n", old, first >> V }' "$F/kept.csv"

# Figures.
CP=$(value "$V" copy_example_prompt)
chart lesson9_kept "$P/kept" -e "in='$F/kept.csv'; K=$K; layer=$SHOW_L; copy1=$(value "$F/summary.csv" start_token); copy2=$CP; len=$((T - CP))"
figure kept.png "Which positions each policy keeps on one text (a line of the validation split, then other text, then the line again), layer $SHOW_L, $K positions per head: blue kept, grey evicted, a dot where the full cache's last query puts at least 5 % of its weight" \
    "同一段文本上各策略保留哪些位置（验证集中的一行，接着别的文本，最后再重复这一行）：第 $SHOW_L 层，每个头保留 $K 个位置；蓝色为保留，灰色为驱逐，黑点是完整缓存的最后一个查询放了至少 5 % 权重的位置"
chart lesson9_budget "$P/budget" -e "mass='$D/mass_summary.csv'; in='$F/frontier.csv'"
figure budget.png "Against the budget K: the share of the full cache's attention weight that falls on evicted positions (mean over heads and steps, bars from the head that loses least to the one that loses most), and top-1 agreement with the full cache" \
    "随预算 K 变化：完整缓存的注意力权重落在被驱逐位置上的比例（对头和步取平均，竖线从损失最少的头到最多的头），以及与完整缓存 top-1 预测一致的比例"
chart lesson9_copy "$P/copy" -e "in='$F/copy.csv'"
figure copy.png "Copying a repeated line: the share of the repeat's bytes each policy predicts right (teacher-forced), at each budget, against the full cache" \
    "复制重复的一行：在每个预算下，各策略对重复部分逐字节预测正确的比例（teacher forcing），虚线是完整缓存"
chart frontier "$P/frontier" -e "in='$F/frontier.csv'"
figure frontier.png "One frontier: KV bytes per token of context against the mean KL from the full cache's next-token distribution, for every lever: storage types with and without the Hadamard rotation, four eviction policies at three budgets, K/V heads pooled into fewer groups" \
    "一条前沿：每个词元上下文占用的 KV 字节数，对比与完整缓存下一词元分布的平均 KL；包括所有手段：有无 Hadamard 旋转的各存储类型、三个预算下的四种驱逐策略、把 K/V 头合并成更少的组"
chart lesson9_heavy "$P/heavy" -e "in='$F/heavy.csv'"
figure heavy.png "Heavy hitters: the attention each position accumulates over a text, sorted, against its rank on log-log axes, one line per layer" \
    "重击者（heavy hitter）：每个位置在整段文本上累计得到的注意力，排序后对其名次画在双对数坐标上，每层一条线"

# What the text says of these numbers.
for b in 32 64 128; do
    claim "the oracle has a lower KL than every online policy at K = $b" \
        "$(value "$V" kl_oracle_K_$b) < $(value "$V" kl_h2o_K_$b) && $(value "$V" kl_oracle_K_$b) < $(value "$V" kl_snapkv_K_$b) && $(value "$V" kl_oracle_K_$b) < $(value "$V" kl_window_K_$b)"
    claim "H2O has a lower KL than the window at K = $b" "$(value "$V" kl_h2o_K_$b) < $(value "$V" kl_window_K_$b)"
    claim "the oracle loses less weight than any policy at K = $b" \
        "$(value "$V" mass_oracle_$b) <= $(value "$V" mass_h2o_$b) && $(value "$V" mass_oracle_$b) <= $(value "$V" mass_window_$b) && $(value "$V" mass_oracle_$b) <= $(value "$V" mass_snapkv_$b)"
done
claim "pooling K/V heads into 3 groups costs more KL than any policy at K = 32" \
    "$(value "$V" kl_G_3) > $(value "$V" kl_window_K_32) && $(value "$V" kl_G_3) > $(value "$V" kl_h2o_K_32)"
claim "q4_0 has a KL below every eviction policy but the oracle at K = 32, at fewer bytes" \
    "$(value "$V" kl_q4_0) < $(value "$V" kl_h2o_K_32) && $(value "$V" kl_q4_0) < $(value "$V" kl_snapkv_K_32) && $(value "$V" bytes_q4_0) < $(value "$V" bytes_h2o_K_32)"
claim "the 8-bit types and the halves stay below 1e-4 bits of KL" \
    "$(value "$V" kl_int8) < 1e-4 && $(value "$V" kl_q8_0) < 1e-4 && $(value "$V" kl_fp16) < 1e-4 && $(value "$V" kl_bf16) < 1e-4"
claim "the planted outlier makes q4_0's error at least twice as large without the rotation as with it" \
    "$(value "$V" qerr_K_outlier) >= 2 * $(value "$V" qerr_rot_K_outlier)"
claim "on this model's own K and V the rotation changes q4_0's error by less than 10 %" \
    "$(value "$V" qerr_rot_K) < 1.1 * $(value "$V" qerr_K) && $(value "$V" qerr_rot_K) > 0.9 * $(value "$V" qerr_K) && $(value "$V" qerr_rot_V) < 1.1 * $(value "$V" qerr_V) && $(value "$V" qerr_rot_V) > 0.9 * $(value "$V" qerr_V)"
claim "at K = 64 the window copies at least 0.1 worse than the full cache and the oracle within 0.05 of it" \
    "$(value "$V" copied_window_K_64) < $(value "$V" copied_full) - 0.1 && $(value "$V" copied_oracle_K_64) >= $(value "$V" copied_full) - 0.05"

claim "H2O loses within 0.02 of the window's weight at K = 32 and 64 yet agrees on the next byte more often" \
    "$(value "$V" mass_h2o_32) - $(value "$V" mass_window_32) <= 0.02 && $(value "$V" mass_window_32) - $(value "$V" mass_h2o_32) <= 0.02 && $(value "$V" mass_h2o_64) - $(value "$V" mass_window_64) <= 0.02 && $(value "$V" mass_window_64) - $(value "$V" mass_h2o_64) <= 0.02 && $(value "$V" top1_h2o_K_32) > $(value "$V" top1_window_K_32) && $(value "$V" top1_h2o_K_64) > $(value "$V" top1_window_K_64)"
NT2=$(value "$V" texts)
claim "choosing beats the window on every text at K = 32, less often as K grows, not on every text at K = 128" \
    "$(value "$V" h2o_beats_window_32) == $NT2 && $(value "$V" snap_beats_window_32) == $NT2 && $(value "$V" h2o_beats_window_64) >= $(value "$V" h2o_beats_window_128) && $(value "$V" h2o_beats_window_128) < $NT2 && $(value "$V" snap_beats_window_128) < $NT2"
claim "the oracle beats every online policy on every text at every budget" \
    "$(value "$V" oracle_beats_all_32) == $NT2 && $(value "$V" oracle_beats_all_64) == $NT2 && $(value "$V" oracle_beats_all_128) == $NT2"
NC=$(value "$V" copy_texts)
claim "the window loses the copy on nearly every text (at least 3/4) at every budget; H2O and SnapKV lose it less often as K grows; the oracle never" \
    "$(value "$V" lost_window_K_32) >= 0.75 * $NC && $(value "$V" lost_window_K_64) >= 0.75 * $NC && $(value "$V" lost_window_K_128) >= 0.75 * $NC && $(value "$V" lost_h2o_K_32) >= $(value "$V" lost_h2o_K_128) && $(value "$V" lost_snapkv_K_32) >= $(value "$V" lost_snapkv_K_128) && $(value "$V" lost_oracle_K_32) + $(value "$V" lost_oracle_K_64) + $(value "$V" lost_oracle_K_128) == 0"
claim "the oracle's KL is more than ten times below SnapKV's, the best online policy, at every budget" \
    "$(value "$V" kl_snapkv_K_32) <= $(value "$V" kl_h2o_K_32) && $(value "$V" kl_snapkv_K_64) <= $(value "$V" kl_h2o_K_64) && $(value "$V" kl_snapkv_K_128) <= $(value "$V" kl_h2o_K_128) && 10 * $(value "$V" kl_oracle_K_32) < $(value "$V" kl_snapkv_K_32) && 10 * $(value "$V" kl_oracle_K_64) < $(value "$V" kl_snapkv_K_64) && 10 * $(value "$V" kl_oracle_K_128) < $(value "$V" kl_snapkv_K_128)"
claim "q4_0 has a lower KL than every online eviction at every budget" \
    "$(value "$V" kl_q4_0) < $(value "$V" kl_window_K_128) && $(value "$V" kl_q4_0) < $(value "$V" kl_h2o_K_128) && $(value "$V" kl_q4_0) < $(value "$V" kl_snapkv_K_128)"
claim "pooling into 3 groups costs more than evicting three quarters (K = 64)" \
    "$(value "$V" kl_G_3) > $(value "$V" kl_window_K_64) && $(value "$V" kl_G_3) > $(value "$V" kl_h2o_K_64) && $(value "$V" kl_G_3) > $(value "$V" kl_snapkv_K_64)"
claim "fp16 and bf16 cost almost nothing (KL below 1e-5 bits)" \
    "$(value "$V" kl_fp16) < 1e-5 && $(value "$V" kl_bf16) < 1e-5"
claim "H2O's older kept cells lie mostly in the first half of the text" "2 * $(value "$V" h2o_old_first) > $(value "$V" h2o_old)"
claim "this model's K has no outlier: block peak below 3, the planted one above 4" "$(value "$V" peak_K) < 3 && $(value "$V" peak_V) < 3 && $(value "$V" peak_K_outlier) > 4"
claim "a budget of K = 64 is a quarter of the context" "4 * $K == $T"
# "rank 1 stands above the line the next ranks follow": in every layer the step from rank 1
# to 2 is steeper than the one from 2 to 3
claim "in every layer rank 1 stands above the line of the next ranks" \
    "$(awk -F, "$AWKLIB"'FNR == 1 { header(); next } col("rank") <= 3 { a[col("layer"), col("rank")] = col("accumulated"); L[col("layer")] = 1 }
        END { ok = 1; for (l in L) if (!(a[l, 1] / a[l, 2] > a[l, 2] / a[l, 3])) ok = 0; print ok }' "$F/heavy.csv") == 1"

# The verdicts, chosen by the numbers.
awk -v n="$(value "$V" heavy_heads)" -v e="$(value "$V" heavy_exp_better)" -v rp="$(value "$V" heavy_r2_power)" -v re="$(value "$V" heavy_r2_exp)" \
    -v s="$(value "$V" heavy_slope_median)" -v en="$D/heavy_verdict.md" -v zh="$D/heavy_verdict.zh.md" 'BEGIN {
    if (2 * e > n) {
        printf "Not a power law here: a straight line on the log-log axes (a power law, median slope %s) fits the rank curve of %d heads out of %d worse than an exponential does (mean R² %s against %s). The curve bends twice: rank 1 stands above the line the next ranks follow, and the tail falls off a cliff, because the last positions of a text have had only a few queries to collect attention from.\n", s, e, n, rp, re > en
        printf "在这里它不是幂律：在 %d 个头中有 %d 个，双对数坐标上的直线（幂律，斜率中位数 %s）对名次曲线的拟合不如指数函数（平均 R² 为 %s，指数为 %s）。曲线有两处弯折：名次 1 高出后面各名次连成的直线；尾部则断崖式下落，因为文本末尾的位置只经历了很少几个查询，来不及积累注意力。\n", n, e, s, rp, re > zh
    } else {
        printf "A power law fits: a straight line on the log-log axes (median slope %s) fits the rank curve of %d heads out of %d better than an exponential (mean R² %s against %s).\n", s, n - e, n, rp, re > en
        printf "幂律成立：在 %d 个头中有 %d 个，双对数坐标上的直线（斜率中位数 %s）对名次曲线的拟合好于指数函数（平均 R² 为 %s，指数为 %s）。\n", n, n - e, s, rp, re > zh
    }
}'

lesson_end 9
