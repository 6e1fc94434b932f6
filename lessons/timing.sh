#!/bin/sh
# timing.sh — measured numbers for lessons 4 and 5 (time per decode step, process RSS).
#   sh lessons/timing.sh BIN      (what `make timing` runs; `make lessons` never does)
# Measurements differ run to run and machine to machine, so they live apart from the
# generated lessons, in data/measured/, and are committed only when someone re-measures.
# Writes data/measured/{decode_time.csv,decode_time.md,rss.csv,rss.md,values.csv,machine.txt}
# and plots/measured/{decode_time,kv_memory_rss}.{png,svg}.
set -eu
. lessons/lib.sh
KV=$1
[ -x "$KV" ] || { echo "timing: no kvscope binary at $KV (run make first)" >&2; exit 2; }
OUT=data/measured
W=$OUT.tmp.$$
trap 'rm -rf "$W"' EXIT
rm -rf "$W"; mkdir -p "$W"

# Time of one decode step at each length, with the cache and without (kvscope compare:
# median of the timed runs, with min and max), and its chart.
"$KV" compare --out "$W/compare" --quiet
mv "$W/compare/timing.csv" "$W/decode_time.csv"
mv "$W/compare/timing.md" "$W/decode_time.md"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { T = $(c["T"]); s = $(c["speedup"]); m = $(c["cache_median_s"]); r = $(c["recompute_median_s"]) }
    END { printf "key,value\nspeedup_T,%d\nspeedup,%.0f\ncache_ms,%.3f\nrecompute_ms,%.1f\n", T, s, 1e3 * m, 1e3 * r }' \
    "$W/decode_time.csv" > "$W/values.csv"
rm -rf "$W/compare"
mkdir -p "$W/plots"
gnuplot -e "in='$W/decode_time.csv'; out='$W/plots/decode_time'" plots/time.gp

# RSS of the process during a long decode, next to the cache's own bytes.
"$KV" run --prompt-ids 0 --steps 1000 --record kv,timing --out "$W/run" --quiet
awk -F, 'FNR == 1 { f++; next } f == 1 { kv[$1, $2] = $3 "," $4 "," $5 } f == 2 { print $1 "," $2 "," kv[$1, $2] "," $4 }' \
    "$W/run/kv_memory.csv" "$W/run/timing.csv" | sed '1i phase,step,tokens,kv_bytes,kv_reserved_bytes,rss_bytes' > "$W/rss.csv"
awk -F, "$AWKLIB"'
NR == 1 { print "| tokens T | KV bytes used | KV bytes reserved | process RSS |"; print "|---:|---:|---:|---:|"; next }
$3 == 1 || $3 == 256 || $3 == 512 || $3 == 1001 { printf "| %d | %s | %s | %s |\n", $3, kib($4), kib($5), kib($6) }
NR == 2 { r0 = $6 } { r1 = $6; k1 = $4; k0 = (NR == 2 ? $4 : k0) }
END { printf "rss_growth,%s\nkv_growth,%s\n", kib(r1 - r0), kib(k1 - k0) >> "'"$W/values.csv"'" }' "$W/rss.csv" > "$W/rss.md"
gnuplot -e "in='$W/run/kv_memory.csv'; rss='$W/run/timing.csv'; out='$W/plots/kv_memory_rss'" plots/kv_memory.gp
rm -rf "$W/run"
{ uname -srm; nproc | sed 's/$/ cores/'; grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //'; } > "$W/machine.txt" || true

rm -rf plots/measured
mv "$W/plots" plots/measured
rm -rf "$OUT"
mv "$W" "$OUT"
trap - EXIT
echo "timing: wrote $OUT/ and plots/measured/"
