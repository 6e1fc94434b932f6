#!/bin/sh
# lesson8.sh — data and figures of lesson 8 (what the trained model's heads learned: the
# heads chart, the previous-token and induction heads side by side, matching at every copy
# length, what a sliding window does to copying).
#   sh lessons/lesson8.sh BIN [--model DIR]      (what `make lesson8` runs)
# Writes data/lesson8/ (heads/, *.md, values.csv), plots/lesson8/, lessons/lesson8.md and
# lessons/zh/lesson8.md (each sentence and table written here has a Chinese twin, *.zh.md,
# made under the same condition from the same numbers).
. lessons/lib.sh
lesson_begin 8 "$@"

V="$D/values.csv"
S=4
KEEP=8
kv "$V" model_args "$MODEL_ARGS"
kv "$V" sink $S
kv "$V" keep $KEEP
model_words > "$D/model.md"
model_words_zh > "$D/model.zh.md"
# How the shipped model was trained to copy (lessons/model.mk), said only for that model.
if [ "$MODEL_ARGS" = "--model data/model" ]; then
    share=$(sed -n 's/.*--repeat-share \([0-9.]*\).*/\1/p' lessons/model.mk)
    text=$(sed -n 's/.*--repeat-text \([0-9.]*\).*/\1/p' lessons/model.mk)
    pmin=$(sed -n 's/.*--period-min \([0-9]*\).*/\1/p' lessons/model.mk)
    pmax=$(sed -n 's/.*--period-max \([0-9]*\).*/\1/p' lessons/model.mk)
    steps=$(sed -n 's/.*--steps \([0-9]*\).*/\1/p' lessons/model.mk)
    pct=$(awk -v s="$share" 'BEGIN { printf "%.0f", 100 * s }')
    tpct=$(awk -v s="$text" 'BEGIN { printf "%.0f", 100 * s }')
    printf '%s\n' "It was trained for $steps steps (\`lessons/model.mk\`) on the King James Bible, with $pct % of each batch's sequences repeating a segment to the end, the period drawn per sequence from $pmin to $pmax bytes ($tpct % of the segments spans of the text, the others random printable bytes): only matching predicts such a repeat, since no one distance does." > "$D/curriculum.md"
    printf '%s\n' "它训练了 $steps 步（\`lessons/model.mk\`），语料是英王钦定本《圣经》；每个批次（batch）中有 $pct % 的序列从某处起重复一段内容直到结尾，重复周期按序列从 $pmin 到 $pmax 字节中抽取（其中 $tpct % 的片段取自正文，其余是随机的可打印字节）：这样的重复只有靠匹配才能预测，因为没有哪一个固定距离总是对的。" > "$D/curriculum.zh.md"
else
    echo "(The shipped model's training mixed in sequences that repeat a segment, with a period that varies from sequence to sequence.)" > "$D/curriculum.md"
    echo "（随附模型的训练数据中混入了重复某段内容的序列，重复周期因序列而异。）" > "$D/curriculum.zh.md"
fi

# 1. Every head measured at every copy distance, the chart drawn by kvscope heads.
"$KV" heads $MODEL_ARGS --out "$D/heads" --plots "$P" --quiet
figure heads.png "What every head does, one cell per layer and head: the previous-token score before and after the middle of the context, the induction score (the lowest over the copy distances), the weight on position 0 and the entropy, and every head's induction score at each copy distance" \
    "每个注意力头（head）在做什么：每个小图中一格对应一个层（layer，纵轴）和头（横轴）；各小图依次是上下文中点之前和之后的前一词元分数（previous token）、归纳分数（induction，取各复制距离中的最低值）、放在位置 0 上的权重（sink）和注意力行的熵（entropy，比特），最后一图是每个头在每种复制距离下的归纳分数（weight）"
pick_heads "$D/heads"
for k in IND_L IND_H IND_SCORE PREV_L PREV_H PREV_SCORE; do eval "kv \"\$V\" $k \"\$$k\""; done
awk -F, -v L=$PREV_L -v H=$PREV_H -v V="$V" "$AWKLIB"'FNR == 1 { header(); next }
    col("layer") == L && col("head") == H { printf "prev_before,%.2f\nprev_after,%.2f\n", col("prev_before"), col("prev_after") >> V }' "$D/heads/heads.csv"
SPLIT=$(( $("$KV" info $MODEL_ARGS --prompt x | awk -F, '$1 == "N" { print $2 }') / 2 ))
kv "$V" split $SPLIT
# The three best heads by each score, with every score.
for by in prev_token induction sink; do
    awk -F, -v by=$by -v zh="$D/top_$by.zh.md" "$AWKLIB"'FNR == 1 { header(); next }
        { n++; l[n] = col("layer"); h[n] = col("head"); pb[n] = col("prev_before"); pa[n] = col("prev_after")
          i[n] = col("induction"); s[n] = col("sink"); e[n] = col("entropy_bits"); k[n] = col(by) + 0 }
        END {
            for (a = 1; a <= n; a++) o[a] = a
            for (a = 2; a <= n; a++) for (b = a; b > 1 && k[o[b]] > k[o[b - 1]]; b--) { t = o[b]; o[b] = o[b - 1]; o[b - 1] = t }
            print "| layer | head | previous token, before / after the middle | induction (lowest over the copy distances) | sink (position 0) | entropy (bits) |"
            print "|---:|---:|---:|---:|---:|---:|"
            print "| 层 | 头 | 前一词元，中点之前 / 之后 | 归纳（各复制距离中最低） | 汇聚（位置 0） | 熵（比特） |" > zh
            print "|---:|---:|---:|---:|---:|---:|" > zh
            for (a = 1; a <= 3 && a <= n; a++) { x = o[a]; printf "| %d | %d | %.2f / %.2f | %.2f | %.2f | %.2f |\n", l[x], h[x], pb[x], pa[x], i[x], s[x], e[x]
                printf "| %d | %d | %.2f / %.2f | %.2f | %.2f | %.2f |\n", l[x], h[x], pb[x], pa[x], i[x], s[x], e[x] > zh }
        }' "$D/heads/heads.csv" > "$D/top_$by.md"
done

# 2. Matching at every copy distance: the best head, the chosen head and the loss on each copy.
awk -F, -v L=$IND_L -v H=$IND_H -v V="$V" -v zh="$D/lengths.zh.md" "$AWKLIB"'
FNR == 1 { header(); f++; next }
f == 1 { if (col("layer") == L && col("head") == H) mine[col("copy_len")] = col("induction"); next }
{ R = col("copy_len"); n++; len[n] = R; bl[n] = col("best_layer"); bh[n] = col("best_head"); bi[n] = col("best_induction")
  fb[n] = col("first_bits"); sb[n] = col("second_bits") }
END {
    print "| copy distance R | best head (layer, head): induction | layer " L ", head " H ": induction | first copy, bits/byte | second copy, bits/byte |"
    print "|---:|---|---:|---:|---:|"
    print "| 复制距离 R | 最佳头（层, 头）：归纳 | 第 " L " 层的 " H " 号头：归纳 | 第一遍，比特/字节 | 第二遍，比特/字节 |" > zh
    print "|---:|---|---:|---:|---:|" > zh
    for (a = 1; a <= n; a++) {
        printf "| %d | %d, %d: %.2f | %.2f | %.2f | %.2f |\n", len[a], bl[a], bh[a], bi[a], mine[len[a]], fb[a], sb[a]
        printf "| %d | %d, %d: %.2f | %.2f | %.2f | %.2f |\n", len[a], bl[a], bh[a], bi[a], mine[len[a]], fb[a], sb[a] > zh
        if (a == 1 || sb[a] > worst) worst = sb[a]
        if (a == 1 || fb[a] < lowfirst) lowfirst = fb[a]
    }
    printf "lens,%d\nlen_first,%d\nlen_last,%d\nworst_second,%.2f\nlowest_first,%.2f\n", n, len[1], len[n], worst, lowfirst >> V
}' "$D/heads/induction_heads.csv" "$D/heads/induction.csv" > "$D/lengths.md"

# The bytes of the random copies: printable ASCII, so the best a model can do on a first copy
# is log2 of the number of values (uniform), not 8 bits. From the tokens kvscope heads ran
# (the start token, if any, left out: it is the one token at position 0 of no copy byte).
awk -F, -v V="$V" 'NR > 1 && $1 ~ /^copy/ { k = $1; first[k] = first[k] == "" ? $2 : first[k]; t[k, $2] = $3 + 0; n[k]++ }
    END { for (k in n) { z = n[k] % 2; for (p = first[k] + z; p < first[k] + n[k]; p++) { b = t[k, p]
              if (!lo || b < lo) lo = b; if (b > hi) hi = b; seen[b] = 1 } }
          for (b in seen) c++
          printf "byte_lo,%d\nbyte_hi,%d\nbyte_values,%d\nbyte_bits,%.2f\n", lo, hi, c, log(c) / log(2) >> V }' "$D/heads/tokens.csv"
claim "the copies' bytes take every value from byte_lo to byte_hi" \
    "$(value "$V" byte_values) == $(value "$V" byte_hi) - $(value "$V" byte_lo) + 1"
claim "no first copy costs less than log2 of the byte values (uniform random bytes)" \
    "$(value "$V" lowest_first) >= $(value "$V" byte_bits)"

# 3. The circuit on one repeated sequence: the previous-token head and the induction head
# side by side, on kvscope heads' first random sequence of the longest copy distance R8.
R8=$(value "$V" len_last)
kv "$V" r8 $R8
ids=$(awk -F, -v q="copy${R8}_0" '$1 == q { s = s (s == "" ? "" : ",") $3 } END { print s }' "$D/heads/tokens.csv")
LS=$PREV_L; [ "$PREV_L" = "$IND_L" ] || LS="$PREV_L,$IND_L"
"$KV" run $MODEL_ARGS --prompt-ids "$ids" --steps 0 --record none --out "$D/tmp" --layers-shown "$LS" \
    --heads-shown all --plots "$P/hm" --no-gif --no-svg --quiet --fig-prompt "$R8 random bytes ×2" \
    --fig-heads "$PREV_L.$PREV_H=previous-token head,$IND_L.$IND_H=$(ind_title $IND_L $IND_SCORE)" 
mv "$P/hm/prefill_attn_$(head_name $IND_L $IND_H).png" "$P/repeat_attn_ind.png"
mv "$P/hm/prefill_attn_$(head_name $PREV_L $PREV_H).png" "$P/repeat_attn_prev.png"
rm -rf "$P/hm" "$D/tmp"
figure repeat_attn_prev.png "The previous-token head (layer $PREV_L, head $PREV_H) on $R8 random bytes repeated: every row's weight just left of the diagonal, the byte before" \
    "前一词元头（previous-token head，第 $PREV_L 层的 $PREV_H 号头）在重复两遍的 $R8 个随机字节上的注意力：纵轴是正在计算的查询（query），横轴是缓存中的键（key）；每一行的权重都落在对角线左边紧挨着的一格，也就是前一个字节"
figure repeat_attn_ind.png "The head with the best induction score (layer $IND_L, head $IND_H) on the same $R8 random bytes repeated" \
    "归纳分数最高的头（第 $IND_L 层的 $IND_H 号头）在同样重复两遍的 $R8 个随机字节上的注意力：纵轴是查询，横轴是键；第二遍的各行在对角线左边 $((R8 - 1)) 格处（R − 1，R = $R8）画出一条与对角线平行的亮线"

# 3b. The circuit, causally: every head of the previous-token head's layer ablated in turn
# (kvscope heads --ablate: its output z replaced by its mean over the Psalm text, so it no
# longer depends on what it reads), and the induction head's score (the lowest over the copy
# distances) and the loss on each copy of length R8 measured again.
echo "ablated,induction,first_bits,second_bits" > "$D/ablation.csv"
ab_row() { # $1 the ablated head ("none"), $2 the heads folder
    awk -F, -v a="$1" -v L=$IND_L -v H=$IND_H -v R=$R8 "$AWKLIB"'FNR == 1 { header(); f++; next }
        f == 1 && col("layer") == L && col("head") == H { ind = col("induction") }
        f == 2 && col("copy_len") == R { fb = col("first_bits"); sb = col("second_bits") }
        END { printf "%s,%.4f,%.4f,%.4f\n", a, ind, fb, sb }' "$2/heads.csv" "$2/induction.csv" >> "$D/ablation.csv"
}
ab_row none "$D/heads"
NH8=$("$KV" info $MODEL_ARGS --prompt x | awk -F, '$1 == "NH" { print $2 }')
h=0
while [ $h -lt "$NH8" ]; do
    "$KV" heads $MODEL_ARGS --ablate "$PREV_L.$h" --out "$D/tmp_ab" --quiet
    ab_row "$PREV_L.$h" "$D/tmp_ab"
    rm -rf "$D/tmp_ab"
    h=$((h + 1))
done
awk -F, -v p="$PREV_L.$PREV_H" -v V="$V" 'NR == 1 { next }
    $1 == "none" { printf "ab_ind_none,%.2f\nab_second_none,%.2f\nab_first_none,%.2f\n", $2, $4, $3 >> V; next }
    $1 == p { printf "ab_ind_prev,%.2f\nab_second_prev,%.2f\nab_first_prev,%.2f\n", $2, $4, $3 >> V; next }
    { if (!o || $2 < oi) { oi = $2; os = $4; ow = $1 } o++ }
    END { printf "ab_ind_other,%.2f\nab_second_other,%.2f\nab_other,%s\nab_others,%d\n", oi, os, ow, o >> V }' "$D/ablation.csv"
# The caption's verdict, chosen by the numbers (as verdict.md below): whether the previous-
# token head's ablation stops the copying, and whether another head's harms it as much.
awk -F, -v V="$V" -v en="$D/ablation_verdict.md" -v zh="$D/ablation_verdict.zh.md" '
    { v[$1] = $2 } END {
    n = v["ab_ind_none"]; p = v["ab_ind_prev"]; sp = v["ab_second_prev"]; sn = v["ab_second_none"]
    fp = v["ab_first_prev"]; fn = v["ab_first_none"]; o = v["ab_other"]; io = v["ab_ind_other"]; so = v["ab_second_other"]
    if (p < n / 10 && sp > 0.95 * fp) {
        printf "Without the previous-token head the induction score falls from %s to %s and the second copy costs %s bits per byte instead of %s, as much as the first (%s): no copying at all.", n, p, sp, sn, fp > en
        printf "没有了前一词元头，归纳分数从 %s 降到 %s，第二遍每字节要 %s 比特而不是 %s，和第一遍（%s）一样：完全不再复制。", n, p, sp, sn, fp > zh
    } else {
        printf "Without the previous-token head the induction score goes from %s to %s and the second copy costs %s bits per byte instead of %s (the first: %s).", n, p, sp, sn, fp > en
        printf "没有了前一词元头，归纳分数从 %s 变为 %s，第二遍每字节 %s 比特而不是 %s（第一遍：%s）。", n, p, sp, sn, fp > zh
    }
    if (io > p && so < sp && so < fn) {
        printf " The most harmful other head, %s, leaves a score of %s and %s bits per byte: other heads of that layer matter too, but only without the previous-token head does the copying stop entirely.\n", o, io, so > en
        printf "其他头里影响最大的 %s 消融后，归纳分数还有 %s，第二遍 %s 比特/字节：那一层的其他头也很重要，但只有去掉前一词元头，复制才完全停止。\n", o, io, so > zh
    } else {
        printf " Ablating head %s harms the copying as much (score %s, %s bits per byte): the previous-token head is not the only head it needs.\n", o, io, so > en
        printf "消融 %s 对复制的损害同样大（归纳分数 %s，%s 比特/字节）：复制需要的不只是前一词元头。\n", o, io, so > zh
    }
}' "$V"
chart lesson8_ablation "$P/ablation" -e "in='$D/ablation.csv'; prev='$PREV_L.$PREV_H'; ind='$IND_L.$IND_H'; R=$R8"
figure ablation.png "Each head of layer $PREV_L ablated in turn: with the previous-token head ($PREV_L.$PREV_H) ablated the induction head's ($IND_L.$IND_H) score goes from $(value "$V" ab_ind_none) to $(value "$V" ab_ind_prev) and the second copy of $R8 random bytes costs $(value "$V" ab_second_prev) bits/byte (the first $(value "$V" ab_first_prev)) instead of $(value "$V" ab_second_none); the most harmful other head of layer $PREV_L ($(value "$V" ab_other)) leaves a score of $(value "$V" ab_ind_other) and $(value "$V" ab_second_other) bits/byte" \
    "依次消融（ablate）第 $PREV_L 层的每个头：消融前一词元头（$PREV_L.$PREV_H）后，归纳头（$IND_L.$IND_H）的分数从 $(value "$V" ab_ind_none) 变为 $(value "$V" ab_ind_prev)，$R8 个随机字节的第二遍从每字节 $(value "$V" ab_second_none) 比特变成 $(value "$V" ab_second_prev) 比特（第一遍 $(value "$V" ab_first_prev)）；第 $PREV_L 层其他头中影响最大的（$(value "$V" ab_other)）之后分数还有 $(value "$V" ab_ind_other)，第二遍 $(value "$V" ab_second_other) 比特/字节"

# 3c. The phase change (Olsson et al. 2022): the shipped model's training log, the best
# induction head's score and the loss against the step. The shaded steps: from the last
# logged step under 20 % of the final induction score to the first at 80 % of it. Only
# for the shipped model, whose log is data/model/train_log.csv.
LOG=data/model/train_log.csv
if [ "$MODEL_ARGS" = "--model data/model" ] && [ -f "$LOG" ]; then
    awk -F, -v V="$V" "$AWKLIB"'FNR == 1 { header(); next }
        { st = col("step"); l = col("train_loss") / log(2); b = int((st - 1) / 100); s[b] += l; c[b]++
          if (col("induction") != "") { n++; step[n] = st; ind[n] = col("induction") } }
        END { f = ind[n]
              for (k = 1; k <= n && ind[k] < 0.8 * f; k++) if (ind[k] < 0.2 * f) from = k
              to = k
              # the steepest fall of the 100-step mean loss after the first 300 steps
              for (i = 3; (i + 1) in c; i++) { d = s[i] / c[i] - s[i + 1] / c[i + 1]; if (d > best) { best = d; at = i + 1 } }
              printf "phase_from,%d\nphase_to,%d\nphase_ind_from,%.2f\nphase_ind_to,%.2f\nphase_ind_final,%.2f\n", step[from], step[to], ind[from], ind[to], f >> V
              bf = int((step[from] - 1) / 100); bt = int((step[to] - 1) / 100)
              printf "phase_loss_from,%.2f\nphase_loss_to,%.2f\nphase_steepest_lo,%d\nphase_steepest_hi,%d\nphase_steepest_fall,%.2f\n", s[bf] / c[bf], s[bt] / c[bt], at * 100 + 1, at * 100 + 100, best >> V }' "$LOG"
    claim "the steepest fall of the loss after step 300 lies in the phase-change steps" \
        "$(value "$V" phase_steepest_lo) >= $(value "$V" phase_from) && $(value "$V" phase_steepest_hi) <= $(value "$V" phase_to)"
    chart lesson8_phase "$P/phase" -e "in='$LOG'; from=$(value "$V" phase_from); to=$(value "$V" phase_to)"
    figure phase.png "The phase change: in steps $(value "$V" phase_from)–$(value "$V" phase_to) of training the best induction score rose from $(value "$V" phase_ind_from) to $(value "$V" phase_ind_to) and the loss fell faster than anywhere after step 300 ($(value "$V" phase_steepest_fall) bits per byte in steps $(value "$V" phase_steepest_lo)–$(value "$V" phase_steepest_hi))" \
        "相变（phase change）：训练的第 $(value "$V" phase_from)–$(value "$V" phase_to) 步，最佳归纳分数从 $(value "$V" phase_ind_from) 升到 $(value "$V" phase_ind_to)，损失下降得比第 300 步之后任何时候都快（第 $(value "$V" phase_steepest_lo)–$(value "$V" phase_steepest_hi) 步降了 $(value "$V" phase_steepest_fall) 比特/字节）"
    pf=$(value "$V" phase_from) pt=$(value "$V" phase_to) if_=$(value "$V" phase_ind_from) it=$(value "$V" phase_ind_to)
    ifi=$(value "$V" phase_ind_final) lf=$(value "$V" phase_loss_from) lt=$(value "$V" phase_loss_to)
    sl=$(value "$V" phase_steepest_lo) sh=$(value "$V" phase_steepest_hi) sf=$(value "$V" phase_steepest_fall)
    cat > "$D/phase.md" <<EOT
Olsson et al. (2022) saw induction heads form abruptly, in a short stretch of training they
call a phase change, visible in the loss curve as a bump. The
shipped model's training log (\`data/model/train_log.csv\`: the loss of every step, and every
100 steps the best induction and previous-token scores of any head on the training batches'
repeats) shows the same:

![Training loss and the heads' scores against the step](../plots/lesson8/phase.png)

*Top: the training loss (bits per byte) of every step, its mean over 50 steps and the
validation loss. Bottom: the best induction score and the best previous-token score of any
head, measured on the training batches (not the random bytes of \`kvscope heads\`). The
previous-token head forms first; in steps $pf–$pt (shaded) the induction score rises from
$if_ to $it (of its final $ifi) and the mean loss falls from $lf (steps $((pf - 99))–$pf) to $lt
(steps $((pt - 99))–$pt): its fastest fall after step 300, $sf bits per byte in steps $sl–$sh.*
([SVG](../plots/lesson8/phase.svg))
EOT
    cat > "$D/phase.zh.md" <<EOT
Olsson 等人（2022）看到，归纳头是在训练中很短的一段里突然形成的，他们称之为相变（phase change），在损失曲线上表现为一个鼓包。随附模型的训练日志（\`data/model/train_log.csv\`：每一步的损失，以及每 100 步在训练批次的重复片段上测得的、所有头中最好的归纳分数和前一词元分数）显示了同样的现象：

![Training loss and the heads' scores against the step](../../plots/lesson8/phase.png)

*上图：每一步的训练损失（比特/字节，横轴是训练步数 training step）、它 50 步的平均（mean of 50 steps）和验证损失（validation）。下图：所有头中最好的归纳分数（induction）和前一词元分数（previous token），是在训练批次上测的（不是 \`kvscope heads\` 的随机字节）。前一词元头先形成；在第 $pf–$pt 步（阴影部分），归纳分数从 $if_ 升到 $it（最终为 $ifi），平均损失从 $lf（第 $((pf - 99))–$pf 步）降到 $lt（第 $((pt - 99))–$pt 步）：这是第 300 步之后最快的下降，第 $sl–$sh 步降了 $sf 比特/字节。*（[SVG](../../plots/lesson8/phase.svg)）
EOT
else
    echo "(The phase change in which the induction head formed is drawn from the shipped model's training log, \`data/model/train_log.csv\`; this model has none.)" > "$D/phase.md"
    echo "（归纳头形成时的相变是用随附模型的训练日志 \`data/model/train_log.csv\` 画的；这个模型没有训练日志。）" > "$D/phase.zh.md"
fi

# 4. What a window does to copying: sequences of kvscope heads at the longest copy distance R
# (R bytes, then the same R bytes, after the start token if the model has one), prompted
# with the first copy and the first KEEP bytes of the second; the model writes the rest
# greedily with the full cache and with windows of S sinks and W - S recent positions (the
# newest included): W - S = R (the token after the first occurrence, R - 1 back, still in
# the window), W - S = R - 1 (just evicted), and W = R/2.
R=$R8
SAMPLES=$(awk -F, -v p="copy${R}_" 'index($1, p) == 1 { s[$1] = 1 } END { print length(s) }' "$D/heads/tokens.csv")
WLONG=$((R + S))
WEDGE=$((R + S - 1))
WSHORT=$((R / 2))
kv "$V" R $R
kv "$V" rm1 $((R - 1))
kv "$V" samples $SAMPLES
kv "$V" wshort $WSHORT
kv "$V" wlong $WLONG
kv "$V" wedge $WEDGE
kv "$V" rest $((R - KEEP))
for w in full long edge short; do
    case $w in full) opt="" ;; long) opt="--window $WLONG --sink $S" ;; edge) opt="--window $WEDGE --sink $S" ;;
               short) opt="--window $WSHORT --sink $S" ;; esac
    right=0 runs=0 far=0
    s=0
    while [ $s -lt $SAMPLES ]; do
        awk -F, -v q="copy${R}_$s" '$1 == q { print $3 }' "$D/heads/tokens.csv" > "$D/seq.txt"
        n0=$(awk 'END { print NR - 2 * '$R' }' "$D/seq.txt") # 1 with a start token, else 0
        ids=$(awk -v n=$((R + KEEP)) -v z=$n0 'NR <= n + z { s = s (s == "" ? "" : ",") $1 } END { print s }' "$D/seq.txt")
        "$KV" run $MODEL_ARGS --prompt-ids "$ids" --steps $((R - KEEP)) --record tokens --out "$D/tmp" $opt --quiet
        # bytes right; runs of wrong bytes (a wrong byte after a right one: until then the
        # model has read the true sequence); and the runs that start right after a byte
        # that also occurs in the first copy more than WLONG - S - 1 positions back, where
        # no window of this table reaches (the induction head can match it too)
        set -- $(awk -F, -v R=$R -v z=$n0 -v reach=$((WLONG - S - 1)) "$AWKLIB"'FNR == NR { want[FNR - 1] = $1; next }
            FNR == 1 { header(); next }
            col("step") > 0 { p = col("pos"); ok = col("token_id") == want[p]
                if (ok) n++
                else if (!bad) { runs++; q = want[p - 1]
                    for (j = z; j < z + R; j++) if (want[j] == q && j != p - 1 - R && j < p - 1 - reach) { far++; break } }
                bad = !ok }
            END { print n + 0, runs + 0, far + 0 }' "$D/seq.txt" "$D/tmp/tokens.csv")
        right=$((right + $1)) runs=$((runs + $2)) far=$((far + $3))
        rm -rf "$D/tmp"
        s=$((s + 1))
    done
    kv "$V" right_$w $right
    kv "$V" runs_$w $runs
    kv "$V" far_$w $far
    kv "$V" pct_$w "$(awk -v a=$right -v b=$((SAMPLES * (R - KEEP))) 'BEGIN { printf "%.1f", 100 * a / b }')"
done
rm -f "$D/seq.txt"
kv "$V" total $((SAMPLES * (R - KEEP)))
kv "$V" prompt_len $((R + KEEP))
kv "$V" prompt_ids $((R + KEEP + n0))
rm -f "$D/heads/tokens.csv"

# The verdict on matching, one sentence chosen by the numbers: an induction head (layer
# >= 1, every copy distance >= 0.5, the second copy at most 1 bit per byte) or none.
awk -v L=$IND_L -v H=$IND_H -v pl=$PREV_L -v sc=$IND_SCORE -v w="$(value "$V" worst_second)" -v f="$(value "$V" lowest_first)" \
    -v en="$D/verdict.md" -v zh="$D/verdict.zh.md" 'BEGIN {
    if (L >= 1 && pl < L && sc >= 0.5 && w <= 1.0) {
        printf "Layer %d, head %d is an induction head: it puts at least %.2f of its weight on the token after the first copy at every copy distance, and the second copy costs at most %.2f bits per byte against at least %.2f for the first. It sits in a later layer than the previous-token head, as the circuit needs.\n", L, H, sc, w, f > en
        printf "第 %d 层的 %d 号头是归纳头：在每一种复制距离下，它都把至少 %.2f 的权重放在第一遍中对应位置之后的那个词元上；第二遍每字节最多花费 %.2f 比特，而第一遍至少要 %.2f 比特。它所在的层在前一词元头之后，正符合这个回路的要求。\n", L, H, sc, w, f > zh
    } else {
        printf "No head of this model is an induction head: the best score that holds at every copy distance is %.2f (layer %d, head %d), and the second copy still costs up to %.2f bits per byte (the first at least %.2f). The model has the first half of the circuit, a previous-token head, but not the second: the copying below is what is left without it.\n", sc, L, H, w, f > en
        printf "这个模型没有归纳头：在每一种复制距离下都成立的最高分数是 %.2f（第 %d 层的 %d 号头），第二遍每字节仍要花费多达 %.2f 比特（第一遍至少 %.2f 比特）。模型有回路的前一半，即一个前一词元头，却没有后一半；下面的复制能力就是缺了后一半之后剩下的。\n", sc, L, H, w, f > zh
    }
}'

# What the text says of these numbers: the previous-token head holds on both sides of the
# middle of the context, and a window shorter than the copy distance copies no better than
# chance would (1 in 95 printable bytes, a few bytes of the total).
claim "the previous-token head keeps to the byte before after the middle of the context too" \
    "$(value "$V" prev_after) >= 0.5 && $(value "$V" prev_before) >= 0.5"
claim "the window shorter than the copy distance gets at most a fifth of the bytes right" \
    "$(value "$V" pct_short) <= 20"
claim "the full cache copies at least as well as the short window" \
    "$(value "$V" right_full) >= $(value "$V" right_short)"
claim "a window with W - S = R copies (at least nine bytes in ten)" "$(value "$V" pct_long) >= 90"
claim "a window with W - S = R - 1 copies almost nothing (at most a fifth)" "$(value "$V" pct_edge) <= 20"
claim "the window with W - S = R copies better than the full cache" "$(value "$V" right_long) > $(value "$V" right_full)"
if [ "$(value "$V" far_full)" = "$(value "$V" runs_full)" ]; then
    kv "$V" runs_sentence "All $(value "$V" runs_full) of the full cache's runs of wrong bytes start"
    kv "$V" runs_sentence_zh "完整缓存的 $(value "$V" runs_full) 段错误字节全都"
else
    kv "$V" runs_sentence "Of the full cache's $(value "$V" runs_full) runs of wrong bytes, $(value "$V" far_full) start"
    kv "$V" runs_sentence_zh "完整缓存的 $(value "$V" runs_full) 段错误字节中，有 $(value "$V" far_full) 段"
fi
claim "most of the full cache's runs of wrong bytes follow a byte that recurs beyond the window's reach" \
    "2 * $(value "$V" far_full) > $(value "$V" runs_full) && $(value "$V" far_long) < $(value "$V" far_full)"

lesson_end 8
