#!/bin/sh
# timing.sh — measured numbers for lessons 4 and 5 (time per decode step, process RSS).
#   sh lessons/timing.sh BIN      (what `make timing` runs; `make lessons` never does)
#   sh lessons/timing.sh BIN charts   redraw plots/measured/ from data/measured/ without
#                                      measuring again (`make timing-charts`)
# Measurements differ run to run and machine to machine, so they live apart from the
# generated lessons, in data/measured/, and are committed only when someone re-measures;
# lessons 4 and 5 include them and are re-rendered here (`make lessons` never measures).
# Writes data/measured/{decode_time,weights_time,rss}.{csv,md,zh.md}, values.csv and machine.txt,
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
    gnuplot -e "in='$1/roofline.csv'; peak=$(value "$1/roof.csv" peak_gflops); bw=$(value "$1/roof.csv" read_gbs); out='$2/roofline'" plots/lesson4_roofline.gp
}
# The gallery's captions of the charts, into folder $1.
captions() {
    printf '%s\t%s\n' decode_time.png "Measured time of one decode step with and without the cache: the gap between the lines is the speed-up, far below the FLOP ratio (median, min–max bars) — lesson 4" \
    kv_memory_rss.png "The process's measured RSS grows with the cache's used bytes, not with its reserved ones, over 1000 decode steps — lesson 5" > "$1/figures.tsv"
    [ -f "$1/roofline.csv" ] || return 0
    printf '%s\t%s\n' roofline.png "Batched decode of GPT-2 small's shapes on this machine's roofline: FLOPs per byte grow with the batch size B; left of the ridge the step is bound by memory, right of it by arithmetic; the time per generated token falls with B — lesson 4" >> "$1/figures.tsv"
}
# The same captions in Chinese, for plots/README.zh.md.
captions_zh() {
    printf '%s\t%s\n' decode_time.png "实测的一个解码步耗时，有缓存（with cache）与无缓存（without cache）：两条线的差距就是加速比，远低于浮点运算次数之比（中位数，误差线为最小–最大）— 第 4 课" \
    kv_memory_rss.png "实测的进程常驻内存（RSS）在 1000 个解码步中跟着缓存的已用字节增长，而不是预留字节 — 第 5 课" > "$1/figures.zh.tsv"
    [ -f "$1/roofline.csv" ] || return 0
    printf '%s\t%s\n' roofline.png "GPT-2 small 形状的批处理解码在本机屋顶线（roofline）上的位置：每字节浮点运算次数随批大小 B 增长；脊点左侧受内存带宽限制，右侧受算力限制；每生成一个词元的时间随 B 下降 — 第 4 课" >> "$1/figures.zh.tsv"
}
# Lesson 4's section on the roofline ({{optional}}: only a measurement writes it).
# roofline_facts FOLDER: what the points show, as shell assignments: the ridge, the batch
# sizes left of it and their share of the slanted roof, the share of the FMA peak at
# B = 32 and at the largest B, and the time per generated token at B = 1 and its lowest.
roofline_facts() {
    awk -F, -v peak="$(value "$1/roof.csv" peak_gflops)" -v bw="$(value "$1/roof.csv" read_gbs)" "$AWKLIB"'
    FNR == 1 { header(); next }
    { B = col("B") + 0; x = col("flops_per_byte"); g = col("gflops_s"); st = col("step_s")
      if (x * bw < peak) { r = g / (x * bw); if (B == 1) r1 = r; rlast = r; blast = B
                           if (B > 1 && (!nd++ || r < rmin)) { rmin = r; bmin = B } }
      if (B == 1) { t1 = st; tok1 = 1e3 * st }
      if (B == 32) { g32 = g; st32 = st }
      bmax = B; gmax = g; pt = 1e3 * st / B
      if (!best || pt < best) { best = pt; bbest = B } }
    END { printf "ridge=%.1f\nblast=%d\nroof_1=%.0f\nroof_last=%.0f\nroof_lo=%.0f\nb_lo=%d\n", peak / bw, blast, 100 * r1, 100 * rlast, 100 * rmin, bmin
          printf "peak32=%.0f\nbmax=%d\npeakmax=%.0f\n", 100 * g32 / peak, bmax, 100 * gmax / peak
          printf "tok1=%.1f\ntokbest=%.1f\nbbest=%d\ngain32=%.1f\n", tok1, best, bbest, 32 * t1 / st32 }' "$1/roofline.csv"
}
roofline_section() {
    peak=$(value "$1/roof.csv" peak_gflops) bw=$(value "$1/roof.csv" read_gbs)
    eval "$(roofline_facts "$1")"
    machine=$(cat "$1/machine.txt")
    {
        echo "![Batched decode of GPT-2 small on the roofline](../plots/measured/roofline.png)"
        echo
        echo "*Each point is one decode step of B sequences at once, GPT-2 small's shapes, one thread"
        echo "($machine). The step reads every weight once whatever B is, so its FLOPs per byte grow"
        echo "with B. Left of the ridge ($ridge FLOPs per byte) the step is bound by memory: B = 1 ran at"
        echo "$roof_1 % of the slanted roof (the roof is a float sum's bandwidth, which a step can beat a little),"
        echo "B = $blast at $roof_last %, B = $b_lo at only $roof_lo %: with fewer than 8 rows the matmul kernel takes the"
        echo "rows one at a time through each group of weights, and the larger matrices come back from the"
        echo "processor's caches for every row. Right of the ridge the same step is bound by"
        echo "arithmetic: B = 32 reached $peak32 % of the FMA peak, B = $bmax $peakmax %. Right panel: the time"
        echo "of one step (what each sequence waits per token) and the time per generated token, which fell from $tok1 ms at B = 1 to"
        echo "$tokbest ms at B = $bbest; 32 sequences get $gain32× the tokens per second of one.*"
        echo "([SVG](../plots/measured/roofline.svg))"
        echo
        echo "| batch B | FLOPs per decode step | bytes read | FLOPs per byte | reached | one step | per generated token | time to first token |"
        echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
        awk -F, "$AWKLIB"'FNR == 1 { header(); next }
            { printf "| %d | %s | %s | %.1f | %.1f GFLOP/s | %.1f ms | %.2f ms | %.0f ms |\n", col("B"), digits(col("flops_step")),
                     bytes(col("bytes_step")), col("flops_per_byte"), col("gflops_s"), 1e3 * col("step_s"),
                     1e3 * col("step_s") / col("B"), 1e3 * col("ttft_s") }' "$1/roofline.csv"
        echo
        echo "The roof: $peak GFLOP/s (the FMA peak, \`bench_kvscope peak\`) and $bw GB/s (a float sum"
        echo "over 1 GiB, the fastest of 1, 4 and 8 streams side by side, \`bench_kvscope triad\`), both"
        echo "measured here on one thread, like the steps."
    } > "$1/roofline.md"
    # the Chinese twin (lessons/zh/lesson4.md): the same figure, numbers and table
    {
        echo "![Batched decode of GPT-2 small on the roofline](../../plots/measured/roofline.png)"
        echo
        echo "*每个点是 B 条序列一起做的一个解码步（GPT-2 small 的形状，单线程，$machine）。不论 B 多大，这一步只把每个权重读一遍，所以每字节的浮点运算次数随 B 增长。脊点（每字节 $ridge 次浮点运算）左侧受内存带宽限制：B = 1 达到斜屋顶的 $roof_1 %（屋顶是对浮点数求和测得的带宽，解码步可以略微超过它），B = $blast 达到 $roof_last %，B = $b_lo 只有 $roof_lo %：不到 8 行时，矩阵乘法算子逐行走过每组权重，较大的矩阵每一行都要再从处理器缓存里读一遍。脊点右侧受算力限制：B = 32 达到 FMA 峰值的 $peak32 %，B = $bmax 达到 $peakmax %。右图是一步的时间（每条序列每个词元要等的时间）和每生成一个词元的时间，后者从 B = 1 的 $tok1 毫秒降到 B = $bbest 的 $tokbest 毫秒；32 条序列每秒生成的词元是 1 条的 $gain32 倍。*图中英文：左图横轴 FLOPs per byte read (counted) 是每读一个字节的浮点运算次数（计数），纵轴 GFLOP/s reached (measured) 是实测速度；roof 是屋顶（峰值与带宽），ridge 是脊点，memory-bound / compute-bound 是受内存限制 / 受算力限制。右图纵轴是实测毫秒：one step 是一步的时间（每条序列每个词元要等这么久），per generated token 是一步除以 B。（[SVG](../../plots/measured/roofline.svg)）"
        echo
        echo "| 批大小 B | 每个解码步的浮点运算次数 | 读取字节 | 每字节浮点运算次数 | 达到 | 一步 | 每生成一个词元 | 首词元延迟 |"
        tail -n +2 "$1/roofline.md" | sed -n '/^|---/,/^$/p' | sed '/^$/d'
        echo
        echo "屋顶：$peak GFLOP/s（FMA 峰值，\`bench_kvscope peak\`）与 $bw GB/s（对 1 GiB 浮点数求和，取 1、4、8 路并行读取中最快者，\`bench_kvscope triad\`），都在本机单线程上测得，与各步相同。"
    } > "$1/roofline.zh.md"
}
# tables_zh FOLDER: the Chinese twins of the three tables (decode_time, weights_time, rss
# .zh.md, for lessons/zh/lesson4.md and lesson5.md): the same formatted rows under a
# Chinese header, their words in Chinese. From the .md files, so `charts` remakes them too.
tables_zh() {
    { echo "| T | 有缓存：中位数（最小–最大） | 无缓存：中位数（最小–最大） | 加速比 |"
      tail -n +2 "$1/decode_time.md"; } > "$1/decode_time.zh.md"
    { echo "| 权重 | 每步读取的字节 | 一步的耗时：中位数（最小–最大） | 读取速度 | 耗时与 fp32 之比 |"
      tail -n +2 "$1/weights_time.md"; } > "$1/weights_time.zh.md"
    { echo "| 词元数 T | KV 已用字节 | KV 预留字节 | 进程常驻内存（RSS） |"
      tail -n +2 "$1/rss.md"; } > "$1/rss.zh.md"
}
if [ "${2:-}" = charts ]; then
    rm -rf plots/measured.tmp
    charts "$OUT" plots/measured.tmp
    captions "$OUT"
    captions_zh "$OUT"
    if [ -f "$OUT/roofline.csv" ]; then
        roofline_section "$OUT"; "$KV" format "$OUT/roofline.md" "$OUT/roofline.zh.md"
    fi
    tables_zh "$OUT"
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
    tables_zh "$1"
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
