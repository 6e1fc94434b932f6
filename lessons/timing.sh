#!/bin/sh
# timing.sh — measured numbers for lessons 4 and 5 (time per decode step, process RSS).
#   sh lessons/timing.sh BIN      (what `make timing` runs; `make lessons` never does)
#   sh lessons/timing.sh BIN charts   redraw plots/measured/ from data/measured/ without
#                                      measuring again (`make timing-charts`)
# Measurements differ run to run and machine to machine, so they live apart from the
# generated lessons, in data/measured/, and are committed only when someone re-measures;
# lessons 4 and 5 include them and are re-rendered here (`make lessons` never measures).
# Writes data/measured/{decode_time,weights_time,rss}.{csv,md}, values.csv and machine.txt,
# the roofline (roofline.csv, roof.csv, roofline.md: BENCH, the tests/bench binary that
# `make timing` builds, measures the machine's FMA peak and read bandwidth) and
# plots/measured/{decode_time,kv_memory_rss,roofline}.{png,svg}.
set -eu
. lessons/lib.sh
KV=$1
[ -x "$KV" ] || { echo "timing: no kvscope binary at $KV (run make first)" >&2; exit 2; }
OUT=data/measured
MODEL_NOTE="the built-in model: L = 1, C = 768, n_vocab = 256, one thread"
BENCH=${BENCH:-build/release/bench_kvscope}
GPT2_ARGS="--layers 12 --vocab 50257"

# The charts, from the measured CSVs in folder $1 into folder $2.
charts() {
    mkdir -p "$2"
    gnuplot -e "in='$1/decode_time.csv'; model='$MODEL_NOTE'; machine='$(cat "$1/machine.txt")'; out='$2/decode_time'" plots/time.gp
    gnuplot -e "in='$1/rss.csv'; rss='$1/rss.csv'; out='$2/kv_memory_rss'" plots/kv_memory.gp
    # measurements from before the roofline have none: the other charts still redraw
    [ -f "$1/roofline.csv" ] || return 0
    gnuplot -e "in='$1/roofline.csv'; peak=$(value "$1/roof.csv" peak_gflops); bw=$(value "$1/roof.csv" read_gbs); machine='$(cat "$1/machine.txt")'; out='$2/roofline'" plots/lesson4_roofline.gp
}
# The gallery's captions of the charts, into folder $1.
captions() {
    printf '%s\t%s\n' decode_time.png "Measured time of one decode step with and without the cache: the gap between the lines is the speed-up, far below the FLOP ratio (median, min–max bars) — lesson 4" \
    kv_memory_rss.png "The process's measured RSS grows with the cache's used bytes, not with its reserved ones, over 1000 decode steps — lesson 5" > "$1/figures.tsv"
    [ -f "$1/roofline.csv" ] || return 0
    printf '%s\t%s\n' roofline.png "A decode step of GPT-2 small's shapes on this machine's roofline: FLOPs per byte grow with the batch size, and below the ridge the step is bound by memory; time to first token and per output token beside it — lesson 4" >> "$1/figures.tsv"
}
# The same captions in Chinese, for plots/README.zh.md.
captions_zh() {
    printf '%s\t%s\n' decode_time.png "实测的一个解码步耗时，有缓存（with cache）与无缓存（without cache）：两条线的差距就是加速比，远低于浮点运算次数之比（中位数，误差线为最小–最大）— 第 4 课" \
    kv_memory_rss.png "实测的进程常驻内存（RSS）在 1000 个解码步中跟着缓存的已用字节增长，而不是预留字节 — 第 5 课" > "$1/figures.zh.tsv"
    [ -f "$1/roofline.csv" ] || return 0
    printf '%s\t%s\n' roofline.png "GPT-2 small 形状的一个解码步在本机屋顶线（roofline）上的位置：每字节浮点运算次数随批大小 B 增长，脊点左侧受内存带宽限制；右图为首词元延迟与每词元输出时间 — 第 4 课" >> "$1/figures.zh.tsv"
}
# Lesson 4's section on the roofline ({{optional}}: only a measurement writes it).
roofline_section() {
    peak=$(value "$1/roof.csv" peak_gflops) bw=$(value "$1/roof.csv" read_gbs)
    best=$(awk -F, "$AWKLIB"'FNR == 1 { header(); next } { g = col("gflops_s") + 0; if (g > m) m = g }
        END { printf "%.1f", m }' "$1/roofline.csv")
    share=$(awk -v b="$best" -v p="$peak" 'BEGIN { printf "%.0f", 100 * b / p }')
    # what the points show: B = 1 against the memory roof (FLOPs per byte × bandwidth), and
    # the first B that falls below 80 % of its roof
    set -- "$1" $(awk -F, -v bw="$bw" -v peak="$peak" "$AWKLIB"'FNR == 1 { header(); next }
        { r = col("flops_per_byte") * bw; if (r > peak) r = peak; s = col("gflops_s") / r
          if (FNR == 2) { b1 = s; r1 = r } if (!off && s < 0.8) off = col("B") }
        END { printf "%.0f %.1f %d", 100 * b1, r1, off }' "$1/roofline.csv")
    b1share=$2 b1roof=$3 offb=$4
    {
        echo "![A decode step on this machine's roofline](../plots/measured/roofline.png)"
        echo
        echo "*The slanted roof is what the bandwidth allows at each FLOPs per byte, the flat one the"
        echo "FMA peak; they meet at the ridge ($(awk -v p="$peak" -v b="$bw" 'BEGIN { printf "%.1f", p / b }') FLOPs per byte here). At B = 1 the step reaches $b1share % of"
        echo "what the bandwidth allows ($b1roof GFLOP/s): bound by memory. From B = $offb on the points fall below"
        echo "the slanted roof, and the most any batch reaches is $best GFLOP/s ($share % of the FMA peak): these"
        echo "points never reach the ridge, because kvscope's batched step, not the bytes or the FMA peak,"
        echo "sets their pace. Right: the time to first token and per output token against B.*"
        echo "([SVG](../plots/measured/roofline.svg))"
        echo
        echo "| batch B | FLOPs per decode step | bytes read | FLOPs per byte | reached | time per output token | time to first token |"
        echo "|---:|---:|---:|---:|---:|---:|---:|"
        awk -F, "$AWKLIB"'FNR == 1 { header(); next }
            { printf "| %d | %s | %s | %.1f | %.1f GFLOP/s | %.1f ms | %.0f ms |\n", col("B"), digits(col("flops_step")),
                     bytes(col("bytes_step")), col("flops_per_byte"), col("gflops_s"), 1e3 * col("step_s"), 1e3 * col("ttft_s") }' "$1/roofline.csv"
        echo
        echo "The roof: $peak GFLOP/s (the FMA peak, \`bench_kvscope peak\`) and $bw GB/s (a float sum"
        echo "over 1 GiB, the fastest of 1, 4 and 8 streams side by side, \`bench_kvscope triad\`), both"
        echo "measured here on one thread, like the steps."
    } > "$1/roofline.md"
    # the Chinese twin (lessons/zh/lesson4.md): the same figure, numbers and table
    {
        echo "![A decode step on this machine's roofline](../../plots/measured/roofline.png)"
        echo
        echo "*斜的屋顶是带宽在每种“每字节浮点运算次数”下所允许的速度，平的屋顶是 FMA 峰值；两者交于脊点（这里是每字节 $(awk -v p="$peak" -v b="$bw" 'BEGIN { printf "%.1f", p / b }') 次浮点运算）。B = 1 时，解码步达到带宽所允许速度（$b1roof GFLOP/s）的 $b1share %：受内存限制。从 B = $offb 起，各点落到斜屋顶之下，任何批最高只达到 $best GFLOP/s（FMA 峰值的 $share %）：这些点从未到达脊点，因为决定它们速度的是 kvscope 自己的批处理步，而不是读字节或 FMA 峰值。右图：首词元延迟与每词元输出时间随 B 的变化。*图中英文：左图横轴 FLOPs per byte read (counted) 是每读一个字节的浮点运算次数（计数），纵轴 GFLOP/s reached (measured) 是实测达到的速度；roof 是屋顶（峰值与带宽），ridge 是脊点，decode step, batch of B 是批大小为 B 的解码步。右图横轴是批大小 B，纵轴是实测时间（毫秒）。（[SVG](../../plots/measured/roofline.svg)）"
        echo
        echo "| 批大小 B | 每个解码步的浮点运算次数 | 读取字节 | 每字节浮点运算次数 | 达到 | 每词元输出时间 | 首词元延迟 |"
        tail -n +2 "$1/roofline.md" | sed -n '/^|---/,/^$/p' | sed '/^$/d'
        echo
        echo "屋顶：$peak GFLOP/s（FMA 峰值，\`bench_kvscope peak\`）与 $bw GB/s（对 1 GiB 浮点数求和，取 1、4、8 路并行读取中最快者，\`bench_kvscope triad\`），都在本机单线程上测得，与各步相同。"
    } > "$1/roofline.zh.md"
}
if [ "${2:-}" = charts ]; then
    rm -rf plots/measured.tmp
    charts "$OUT" plots/measured.tmp
    captions "$OUT"
    captions_zh "$OUT"
    if [ -f "$OUT/roofline.csv" ]; then
        roofline_section "$OUT"; "$KV" format "$OUT/roofline.md" "$OUT/roofline.zh.md"
    fi
    rm -rf plots/measured
    mv plots/measured.tmp plots/measured
    lesson_end 4
    lesson_end 5
    sh lessons/gallery.sh
    echo "timing: redrew plots/measured/ from $OUT/"
    exit 0
fi
# The tables and values.csv of the measured CSVs in folder $1 (decode_time.csv,
# weights_time.csv, rss.csv): lessons 4 and 5 include them.
tables() {
    awk -F, -v out="$1/values.csv" -v repeat=$REPEAT "$AWKLIB"'
    FNR == 1 { header()
               print "| T | with cache: median (min–max) | without cache: median (min–max) | speed-up |"
               print "|---:|---:|---:|---:|"; next }
    { c = col("cache_median_s"); r = col("recompute_median_s")
      printf "| %d | %.2f ms (%.2f–%.2f) | %.1f ms (%.1f–%.1f) | %.0f× |\n", col("T"), 1e3 * c, 1e3 * col("cache_min_s"),
             1e3 * col("cache_max_s"), 1e3 * r, 1e3 * col("recompute_min_s"), 1e3 * col("recompute_max_s"), r / c
      T = col("T"); s = r / c; cm = c; rm = r }
    END { printf "key,value\nspeedup_T,%d\nspeedup,%.0f\ncache_ms,%.2f\nrecompute_ms,%.1f\nrepeat,%d\n", T, s, 1e3 * cm,
                 1e3 * rm, repeat > out }' "$1/decode_time.csv" > "$1/decode_time.md"
    awk -F, -v out="$1/values.csv" "$AWKLIB"'
    FNR == 1 { header()
               print "| weights | bytes read per step | step time: median (min–max) | read speed | time against fp32 |"
               print "|---|---:|---:|---:|---:|"; next }
    { w = col("weights"); b = col("bytes"); t = col("median_s"); if (!t0) t0 = t
      printf "| %s | %s | %.1f ms (%.1f–%.1f) | %.1f GB/s | %.2f× |\n", w, bytes(b), 1e3 * t, 1e3 * col("min_s"),
             1e3 * col("max_s"), b / t / 1e9, t / t0
      printf "weights_%s_ms,%.1f\n", w, 1e3 * t >> out
      if (w == "fp16") printf "weights_fp16_speedup,%.2f\n", t0 / t >> out }' "$1/weights_time.csv" > "$1/weights_time.md"
    awk -F, -v out="$1/values.csv" "$AWKLIB"'
    FNR == 1 { header(); print "| tokens T | KV bytes used | KV bytes reserved | process RSS |"; print "|---:|---:|---:|---:|"; next }
    { T = col("tokens") + 0; k = col("kv_bytes"); rss = col("rss_bytes") }
    T == 1 || T == 256 || T == 512 || T == 1001 { printf "| %d | %s | %s | %s |\n", T, bytes(k), bytes(col("kv_reserved_bytes")), bytes(rss) }
    FNR == 2 { r0 = rss; k0 = k }
    END { printf "rss_growth,%s\nkv_growth,%s\n", bytes(rss - r0), bytes(k - k0) >> out }' "$1/rss.csv" > "$1/rss.md"
    if [ -f "$1/roofline.csv" ]; then roofline_section "$1"; fi
    "$KV" format "$1"/*.md "$1/values.csv"
}

W=$OUT.tmp.$$
trap 'rm -rf "$W"' EXIT
rm -rf "$W"; mkdir -p "$W"

# Time of one decode step at length T, with the cache (prefill T-1 tokens, then one
# timed step) and without (--no-cache: the step recomputes all T tokens), each run
# REPEAT times in a fresh process; the median, with the fastest and the slowest run.
REPEAT=7
ids() { awk -v n="$1" 'BEGIN { s = "0"; for (i = 1; i < n; i++) s = s "," (i % 256); print s }'; }
median_min_max() { sort -g | awk '{ v[NR] = $1 } END { printf "%s,%s,%s", v[int((NR + 1) / 2)], v[1], v[NR] }'; }
echo "T,cache_median_s,cache_min_s,cache_max_s,recompute_median_s,recompute_min_s,recompute_max_s" > "$W/decode_time.csv"
for T in 16 64 256 1024; do
    p=$(ids $((T - 1)))
    for mode in cache recompute; do
        flag=""; [ $mode = recompute ] && flag=--no-cache
        i=0
        while [ $i -lt $REPEAT ]; do
            "$KV" run $flag --prompt-ids "$p" --steps 1 --record timing --out "$W/run" --quiet
            awk -F, "$AWKLIB"'FNR == 1 { header(); next } col("phase") == "decode" && col("step") == 1 { print col("seconds") }' "$W/run/timing.csv"
            i=$((i + 1))
        done | median_min_max > "$W/$mode"
    done
    echo "$T,$(cat "$W/cache"),$(cat "$W/recompute")" >> "$W/decode_time.csv"
done
rm -f "$W/cache" "$W/recompute"
{ uname -sm; getconf _NPROCESSORS_ONLN | sed 's/$/ CPUs/'; grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //'
  grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | tr ' ' '\n' | grep -xE 'avx2|fma|avx512f|avx512_fp16|avx512_bf16' | paste -sd/ -; } |
    paste -sd, - | sed 's/,/, /g' > "$W/machine.txt"

# Half the bytes, half the time: a decode step of GPT-2 small's shapes (12 layers, the
# 50257-token vocabulary: 0.5 GB of float32 weights, more than any cache) with float32,
# fp16 and bf16 weights, REPEAT fresh runs each, the three interleaved; per run the median
# of its 8 steps, then the median (min–max) over the runs.
for w in fp32 fp16 bf16; do : > "$W/w_$w"; done
i=0
while [ $i -lt $REPEAT ]; do
    for w in fp32 fp16 bf16; do
        "$KV" run $GPT2_ARGS --weights $w --prompt-ids "$(ids 16)" --steps 8 --record timing \
            --out "$W/run" --quiet
        awk -F, "$AWKLIB"'FNR == 1 { header(); next } col("phase") == "decode" { print col("seconds") }' "$W/run/timing.csv" |
            median_min_max | cut -d, -f1 >> "$W/w_$w"
    done
    i=$((i + 1))
done
echo "weights,bytes,median_s,min_s,max_s" > "$W/weights_time.csv"
for w in fp32 fp16 bf16; do
    # the step's weight bytes, as kvscope states them for these shapes and weights
    b=$("$KV" info $GPT2_ARGS --weights $w | awk -F, '$1 == "weight_bytes_decode" { print $2 }')
    echo "$w,$b,$(median_min_max < "$W/w_$w")" >> "$W/weights_time.csv"
    rm -f "$W/w_$w"
done

# The roofline: GPT-2 small's shapes decoded in batches of B = 1 .. 64 (kvscope batch
# --roofline: counted FLOPs and bytes, measured times), under this machine's FMA peak
# and read bandwidth (tests/bench, one thread, the best vector level it has).
if [ -x "$BENCH" ]; then
    "$KV" batch $GPT2_ARGS --roofline 64 --steps 8 --out "$W/roofline" --quiet > /dev/null
    mv "$W/roofline/roofline.csv" "$W/roofline.csv"
    rm -rf "$W/roofline"
    { "$BENCH" peak; "$BENCH" triad; } | awk -F, '
        $1 ~ /^peak_[a-z0-9]+_gflops$/ && $2 > peak { peak = $2 }
        $1 == "read_gbs" { bw = $2 }
        END { if (!peak || !bw) exit 1; printf "key,value\npeak_gflops,%.1f\nread_gbs,%.2f\n", peak, bw }' > "$W/roof.csv"
else
    echo "timing: no $BENCH (make $BENCH): the roofline is not measured" >&2
fi

# RSS of the process during a long decode, next to the cache's own bytes.
"$KV" run --prompt-ids 0 --steps 1000 --record kv,timing --out "$W/run" --quiet
awk -F, "$AWKLIB"'FNR == 1 { header(); f++; next }
    f == 1 { kv[col("phase"), col("step")] = col("tokens") "," col("kv_bytes") "," col("kv_reserved_bytes") "," col("kv_bytes_per_token") }
    f == 2 { print col("phase") "," col("step") "," kv[col("phase"), col("step")] "," col("rss_bytes") }' \
    "$W/run/kv_memory.csv" "$W/run/timing.csv" | sed '1i phase,step,tokens,kv_bytes,kv_reserved_bytes,kv_bytes_per_token,rss_bytes' > "$W/rss.csv"
rm -rf "$W/run"
tables "$W"
charts "$W" "$W/plots"

captions "$W"
captions_zh "$W"
rm -rf plots/measured
mv "$W/plots" plots/measured
rm -rf "$OUT"
mv "$W" "$OUT"
trap - EXIT
# Lessons 4 and 5 and the gallery show these measurements: render them again, so that
# the committed pages and the committed measurements always agree.
lesson_end 4
lesson_end 5
sh lessons/gallery.sh
echo "timing: wrote $OUT/ and plots/measured/; re-rendered lessons 4 and 5"
