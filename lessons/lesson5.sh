#!/bin/sh
# lesson5.sh — data and figures of lesson 5 (what the cache costs: bytes per step, used
# and reserved; the formula; real models; the article's LLaMA-7B figure corrected).
#   sh lessons/lesson5.sh BIN [--model DIR]      (what `make lesson5` runs)
# Writes data/lesson5/, plots/lesson5/, lessons/lesson5.md. The process's RSS is
# measured, so it lives in data/measured/ (`make timing`), which this lesson only includes.
. lessons/lib.sh
lesson_begin 5 "$@"
V="$D/values.csv"
PROMPT="人工智能是"
STEPS=200
kv "$V" prompt "$PROMPT"
kv "$V" steps $STEPS

"$KV" run $MODEL_ARGS --prompt "$PROMPT" --steps $STEPS --record shapes,kv --out "$D/run" --html "$P/explorer.html" --heads-shown 0,1 --quiet

# Bytes of the built-in model's cache, step by step: the prefill, each step where the
# reservation doubles (with the step just before it, when the reservation was full),
# and the last step.
awk -F, -v V="$V" "$AWKLIB"'
function row(l,    a) { split(l, a, ","); printf "| %s | %d | %d | %s | %s | %s |\n", a[1], a[2], a[3], c3(a[4]), c3(a[5]), c3(a[5] - a[4]) }
NR == 1 { print "| phase | step | tokens T | KV bytes used | KV bytes reserved | reserved but empty |"
          print "|---|---:|---:|---:|---:|---:|"; next }
{ if (NR == 2) row($0)
  else if ($5 != prev) { if (lastshown != NR - 1) row(last); row($0); lastshown = NR }
  prev = $5; last = $0; lastnr = NR
  if ($1 == "prefill") { print "T0," $3 >> V; print "kv0," c3($4) >> V; print "per_token," c3($4 / $3) >> V; print "per_token_b," $4 / $3 >> V }
  if ($2 == 50) { print "kv50," c3($4) >> V; print "T50," $3 >> V }
  T = $3; u = $4; r = $5 }
END { if (lastshown != lastnr) row(last)
      print "T_end," T >> V; print "kv_end," c3(u) >> V; print "kv_end_kib," kib(u) >> V
      print "reserved_end," c3(r) >> V; print "reserved_end_kib," kib(r) >> V
      printf "used_share_end,%.1f\n", 100 * u / r >> V }' "$D/run/kv_memory.csv" > "$D/kv_steps.md"

# The formula, with the built-in model's dimensions read back from its shapes.
awk -F, -v V="$V" '
$4 ~ /attn\.cache_k$/ && $1 == "prefill" { split($5, s, "x"); NH = s[3]; hs = s[4] }
$3 ~ /^[0-9]+$/ && $3 + 1 > L { L = $3 + 1 }
END { print "L," L >> V; print "NH," NH >> V; print "hs," hs >> V
      print "formula_per_token," 2 * L * NH * hs * 4 >> V }' "$D/run/shapes.csv"
rm -f "$D/run/shapes.csv"
# The engine's bytes must be the formula's: 2 · L · NH · hs · T · 4 (float32).
awk -F, '
FNR == 1 { f++; next }
f == 1 && $1 == "formula_per_token" { b = $2 }
f == 2 && $4 != b * $3 { print "lesson5: kv_bytes " $4 " at T=" $3 " is not " b " x T" > "/dev/stderr"; bad = 1 }
END { exit bad }' "$V" "$D/run/kv_memory.csv"

# Real models, by the same formula (kvscope kvmem), and the article's LLaMA-7B figure.
"$KV" kvmem --out "$D/kvmem" > /dev/null
"$KV" kvmem --preset llama-2-7b --tokens 2048 > "$D/llama_2048.txt"
"$KV" kvmem --layers 32 --heads 1 --head-dim 128 --tokens 2048 --dtype fp16 > "$D/article_llama.txt"
"$KV" kvmem --preset llama-2-7b --kv-heads 8 --tokens 2048 > "$D/llama_gqa8.txt"
# The first article's table: one 768-wide layer, fp32, T = 4 and T = 100.
for T in 4 100; do
    "$KV" kvmem --layers 1 --heads 12 --head-dim 64 --tokens $T --dtype fp32 > "$D/article_layer_T$T.txt"
done
awk -v V="$V" "$AWKLIB"'/^  at [0-9]+ tokens/ { b = $4; gsub(",", "", b); printf "%s,%s\n%s_c3,%s\n%s_h,%s\n", key, b, key, c3(b), key, kib(b) >> V }
    FNR == 1 { key = FILENAME; sub(/.*\//, "", key); sub(/\.txt$/, "", key); key = key "_bytes" }' \
    "$D/llama_2048.txt" "$D/article_llama.txt" "$D/llama_gqa8.txt" "$D/article_layer_T4.txt" "$D/article_layer_T100.txt"

chart kv_memory "$P/kv_memory" -e "in='$D/run/kv_memory.csv'"
figure kv_memory.png "KV bytes of the built-in model while it generates: the used bytes lie on the formula's line, the reservation jumps at every doubling"
chart kvmem "$P/kvmem_models" -e "in='$D/kvmem/kvmem.csv'"
figure kvmem_models.png "KV cache of real models in fp16 vs tokens: LLaMA-2-7B at 2048 tokens against the article's figure (the circle), which forgot the heads"

lesson_end 5
