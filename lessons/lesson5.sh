#!/bin/sh
# lesson5.sh — data and figures of lesson 5 (what the cache costs: bytes per step, used
# and reserved; the formula; real models; the article's LLaMA-7B figure corrected).
#   sh lessons/lesson5.sh BIN [--model DIR]      (what `make lesson5` runs)
# Writes data/lesson5/, plots/lesson5/, lessons/lesson5.md. The process's RSS is
# measured, so it lives in data/measured/ (`make timing`), which this lesson only includes.
. lessons/lib.sh
lesson_begin 5 "$@"
model_words > "$D/model.md"
V="$D/values.csv"
PROMPT="人工智能是"
STEPS=200
kv "$V" prompt "$PROMPT"
kv "$V" steps $STEPS

"$KV" run $MODEL_ARGS --prompt "$PROMPT" --steps $STEPS --record shapes,kv --out "$D/run" --html "$P/explorer.html" --heads-shown 0,1 --quiet

# Bytes of the built-in model's cache, step by step: the prefill, each step where the
# reservation doubles (with the step just before it, when the reservation was full),
# and the last step.
"$KV" info $MODEL_ARGS --prompt "$PROMPT" > "$D/info.csv"
PER=$(value "$D/info.csv" kv_bytes_per_token)
awk -F, -v V="$V" -v per="$PER" "$AWKLIB"'
function row(i) { printf "| %s | %d | %d | %s | %s | %s |\n", ph[i], st[i], T[i], digits(u[i]), digits(r[i]), digits(r[i] - u[i]) }
FNR == 1 { header()
          print "| phase | step | tokens T | KV bytes used | KV bytes reserved | reserved but empty |"
          print "|---|---:|---:|---:|---:|---:|"; next }
{ n++; ph[n] = col("phase"); st[n] = col("step"); T[n] = col("tokens"); u[n] = col("kv_bytes"); r[n] = col("kv_reserved_bytes")
  if (n == 1) row(n)
  else if (r[n] != r[n - 1]) { if (shown != n - 1) row(n - 1); row(n); shown = n }
  if (ph[n] == "prefill") { print "T0," T[n] >> V; print "kv0," digits(u[n]) >> V; print "per_token," digits(per) >> V; print "per_token_b," per >> V }
  if (st[n] == 50) { print "kv50," digits(u[n]) >> V; print "T50," T[n] >> V } }
END { if (shown != n) row(n)
      print "T_end," T[n] >> V; print "kv_end," digits(u[n]) >> V; print "kv_end_kib," bytes(u[n]) >> V
      print "reserved_end," digits(r[n]) >> V; print "reserved_end_kib," bytes(r[n]) >> V
      printf "used_share_end,%.1f\n", 100 * u[n] / r[n] >> V }' "$D/run/kv_memory.csv" > "$D/kv_steps.md"

# The formula, with the built-in model's dimensions (kvscope info) ...
for k in L NH hs; do kv "$V" $k "$(value "$D/info.csv" $k)"; done
kv "$V" formula_per_token "$PER"
rm -f "$D/info.csv" "$D/run/shapes.csv"
# ... and the engine's bytes must be the formula's: 2 · L · NH · hs · T · 4 (float32).
awk -F, -v b="$PER" "$AWKLIB"'
FNR == 1 { header(); next }
col("kv_bytes") != b * col("tokens") { print "lesson5: kv_bytes " col("kv_bytes") " at T=" col("tokens") " is not " b " x T" > "/dev/stderr"; bad = 1 }
END { exit bad }' "$D/run/kv_memory.csv"

# Real models, by the same formula (kvscope kvmem), and the article's LLaMA-7B figure.
"$KV" kvmem --out "$D/kvmem" > /dev/null
"$KV" kvmem --preset llama-2-7b --tokens 2048 > "$D/llama_2048.txt"
"$KV" kvmem --layers 32 --heads 1 --head-dim 128 --tokens 2048 --dtype fp16 > "$D/article_llama.txt"
"$KV" kvmem --preset llama-2-7b --kv-heads 8 --tokens 2048 > "$D/llama_gqa8.txt"
# The first article's table: one 768-wide layer, fp32, T = 4 and T = 100.
for T in 4 100; do
    "$KV" kvmem --layers 1 --heads 12 --head-dim 64 --tokens $T --dtype fp32 > "$D/article_layer_T$T.txt"
done
# The bytes as kvmem printed them: "  at 2048 tokens   1,073,741,824 B  (1.00 GiB)".
awk -v V="$V" '/^  at [0-9]+ tokens/ { b = $4; gsub(",", "", b); h = $6 " " $7; gsub(/[()]/, "", h)
                                       printf "%s,%s\n%s_c3,%s\n%s_h,%s\n", key, b, key, $4, key, h >> V }
    FNR == 1 { key = FILENAME; sub(/.*\//, "", key); sub(/\.txt$/, "", key); key = key "_bytes" }' \
    "$D/llama_2048.txt" "$D/article_llama.txt" "$D/llama_gqa8.txt" "$D/article_layer_T4.txt" "$D/article_layer_T100.txt"

chart kv_memory "$P/kv_memory" -e "in='$D/run/kv_memory.csv'"
figure kv_memory.png "KV bytes of the built-in model while it generates: the used bytes lie on the formula's line, the reservation jumps at every doubling"
# The cache as a tensor, with this run's numbers after its last step: tokens held and
# positions reserved (kv_memory.csv), the model's L, NH, hs; float32, 4 bytes.
set -- $(awk -F, -v per="$(value "$V" per_token_b)" "$AWKLIB"'FNR == 1 { header(); next }
    { t = col("tokens"); r = col("kv_reserved_bytes") } END { printf "%d %d\n", t, r / per }' "$D/run/kv_memory.csv")
chart lesson5_cache_tensor "$P/cache_tensor" -e "L=$(value "$V" L); NH=$(value "$V" NH); hs=$(value "$V" hs); T=$1; cap=$2; eb=4"
figure cache_tensor.png "The cache as a tensor, layer by layer: K and V, a row per head, a column per position; one decode step writes one column (orange) in every head of K and V — the layout every memory formula counts"
# the models with all heads keeping K and V; the GQA ones have their own figure (gqa.png)
chart kvmem "$P/kvmem_models" -e "in='$D/kvmem/kvmem.csv'; only='gpt2 gpt2-medium gpt2-large gpt2-xl llama-2-7b'"
# Grouped-query attention: the GQA presets' bytes per token (the same kvmem.csv), drawn
# against the tokens a batch holds.
chart lesson5_gqa "$P/gqa" -e "in='$D/kvmem/kvmem.csv'"
figure gqa.png "Grouped-query attention: several query heads read one K/V head (left), so Llama-3-8B, Mistral-7B and Qwen2-7B keep 4 to 9 times fewer bytes per token than a 7B model with all heads (right; arithmetic from their configs): look where each line crosses the 80 GB line"
figure kvmem_models.png "KV cache of real models in fp16 vs tokens: LLaMA-2-7B at 2048 tokens against the article's figure (the circle), which forgot the heads"

lesson_end 5
