#!/bin/sh
# timing.sh — measured numbers for lessons 4 and 5 (time per decode step, process RSS).
#   sh lessons/timing.sh BIN      (what `make timing` runs; `make lessons` never does)
#   sh lessons/timing.sh BIN charts   redraw plots/measured/ from data/measured/ without
#                                      measuring again (`make timing-charts`)
# Measurements differ run to run and machine to machine, so they live apart from the
# generated lessons, in data/measured/, and are committed only when someone re-measures;
# lessons 4 and 5 include them and are re-rendered here (`make lessons` never measures).
# Writes data/measured/{decode_time,weights_time,rss}.{csv,md}, values.csv and machine.txt
# and plots/measured/{decode_time,kv_memory_rss}.{png,svg}.
set -eu
. lessons/lib.sh
KV=$1
[ -x "$KV" ] || { echo "timing: no kvscope binary at $KV (run make first)" >&2; exit 2; }
OUT=data/measured
MODEL_NOTE="the built-in model: L = 1, C = 768, V = 256, one thread"

# The two charts, from the measured CSVs in folder $1 into folder $2.
charts() {
    mkdir -p "$2"
    gnuplot -e "in='$1/decode_time.csv'; model='$MODEL_NOTE'; machine='$(cat "$1/machine.txt")'; out='$2/decode_time'" plots/time.gp
    gnuplot -e "in='$1/rss.csv'; rss='$1/rss.csv'; out='$2/kv_memory_rss'" plots/kv_memory.gp
}
# The gallery's captions of the two charts, into folder $1.
captions() {
    printf '%s\t%s\n' decode_time.png "Measured time of one decode step with and without the cache: the gap between the lines is the speed-up, far below the FLOP ratio (median, min–max bars) — lesson 4" \
    kv_memory_rss.png "The process's measured RSS grows with the cache's used bytes, not with its reserved ones, over 1000 decode steps — lesson 5" > "$1/figures.tsv"
}
if [ "${2:-}" = charts ]; then
    rm -rf plots/measured.tmp
    charts "$OUT" plots/measured.tmp
    captions "$OUT"
    rm -rf plots/measured
    mv plots/measured.tmp plots/measured
    lesson_end 4
    lesson_end 5
    sh lessons/gallery.sh
    echo "timing: redrew plots/measured/ from $OUT/"
    exit 0
fi
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
            awk -F, '$1 == "decode" && $2 == 1 { print $3 }' "$W/run/timing.csv"
            i=$((i + 1))
        done | median_min_max > "$W/$mode"
    done
    echo "$T,$(cat "$W/cache"),$(cat "$W/recompute")" >> "$W/decode_time.csv"
done
rm -f "$W/cache" "$W/recompute"
awk -F, "$AWKLIB"'
NR == 1 { print "| T | with cache: median (min–max) | without cache: median (min–max) | speed-up |"
          print "|---:|---:|---:|---:|"; next }
{ printf "| %d | %.2f ms (%.2f–%.2f) | %.1f ms (%.1f–%.1f) | %.0f× |\n", $1, 1e3 * $2, 1e3 * $3, 1e3 * $4,
         1e3 * $5, 1e3 * $6, 1e3 * $7, $5 / $2
  T = $1; s = $5 / $2; c = $2; r = $5 }
END { printf "key,value\nspeedup_T,%d\nspeedup,%.0f\ncache_ms,%.2f\nrecompute_ms,%.1f\nrepeat,'$REPEAT'\n", T, s, 1e3 * c, 1e3 * r > "'"$W/values.csv"'" }' \
    "$W/decode_time.csv" > "$W/decode_time.md"
{ uname -sm; getconf _NPROCESSORS_ONLN | sed 's/$/ CPUs/'; grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //'
  grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | tr ' ' '\n' | grep -xE 'avx2|fma|avx512f|avx512_fp16|avx512_bf16' | paste -sd/ -; } |
    paste -sd, - | sed 's/,/, /g' > "$W/machine.txt"

# Half the bytes, half the time: a decode step of GPT-2 small's shapes (12 layers, the
# 50257-token vocabulary: 0.5 GB of float32 weights, more than any cache) with float32,
# fp16 and bf16 weights, REPEAT fresh runs each, the three interleaved; per run the median
# of its 8 steps, then the median (min–max) over the runs.
GPT2_ARGS="--layers 12 --vocab 50257"
for w in fp32 fp16 bf16; do : > "$W/w_$w"; done
i=0
while [ $i -lt $REPEAT ]; do
    for w in fp32 fp16 bf16; do
        "$KV" run $GPT2_ARGS --weights $w --prompt-ids "$(ids 16)" --steps 8 --record timing \
            --out "$W/run" --quiet
        awk -F, '$1 == "decode" { print $3 }' "$W/run/timing.csv" | median_min_max | cut -d, -f1 >> "$W/w_$w"
    done
    i=$((i + 1))
done
echo "weights,bytes,median_s,min_s,max_s" > "$W/weights_time.csv"
for w in fp32 fp16 bf16; do
    # the step's weight bytes: the five matrices at 4 or 2 bytes, the vectors at 4
    b=$(awk -v w=$w 'BEGIN { L = 12; C = 768; V = 50257; m = L * 12 * C * C + V * C
        printf "%.0f", (w == "fp32" ? 4 : 2) * m + 4 * (L * 13 * C + 4 * C) }')
    echo "$w,$b,$(median_min_max < "$W/w_$w")" >> "$W/weights_time.csv"
    rm -f "$W/w_$w"
done
awk -F, "$AWKLIB"'
NR == 1 { print "| weights | bytes read per step | step time: median (min–max) | read speed | time against fp32 |"
          print "|---|---:|---:|---:|---:|"; next }
NR == 2 { t0 = $3 }
{ printf "| %s | %s | %.1f ms (%.1f–%.1f) | %.1f GB/s | %.2f× |\n", $1, kib($2), 1e3 * $3, 1e3 * $4, 1e3 * $5,
         $2 / $3 / 1e9, $3 / t0
  printf "weights_%s_ms,%.1f\n", $1, 1e3 * $3 >> "'"$W/values.csv"'"
  if ($1 == "fp16") printf "weights_fp16_speedup,%.2f\n", t0 / $3 >> "'"$W/values.csv"'" }' \
    "$W/weights_time.csv" > "$W/weights_time.md"

# RSS of the process during a long decode, next to the cache's own bytes.
"$KV" run --prompt-ids 0 --steps 1000 --record kv,timing --out "$W/run" --quiet
awk -F, 'FNR == 1 { f++; next } f == 1 { kv[$1, $2] = $3 "," $4 "," $5 } f == 2 { print $1 "," $2 "," kv[$1, $2] "," $4 }' \
    "$W/run/kv_memory.csv" "$W/run/timing.csv" | sed '1i phase,step,tokens,kv_bytes,kv_reserved_bytes,rss_bytes' > "$W/rss.csv"
awk -F, "$AWKLIB"'
NR == 1 { print "| tokens T | KV bytes used | KV bytes reserved | process RSS |"; print "|---:|---:|---:|---:|"; next }
$3 == 1 || $3 == 256 || $3 == 512 || $3 == 1001 { printf "| %d | %s | %s | %s |\n", $3, kib($4), kib($5), kib($6) }
NR == 2 { r0 = $6 } { r1 = $6; k1 = $4; k0 = (NR == 2 ? $4 : k0) }
END { printf "rss_growth,%s\nkv_growth,%s\n", kib(r1 - r0), kib(k1 - k0) >> "'"$W/values.csv"'" }' "$W/rss.csv" > "$W/rss.md"
rm -rf "$W/run"
charts "$W" "$W/plots"

captions "$W"
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
