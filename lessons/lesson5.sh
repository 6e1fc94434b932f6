#!/bin/sh
# lesson5.sh — data and figures of lesson 5 (what the cache costs: bytes per step, used
# and reserved; the formula; real models; the article's LLaMA-7B figure corrected).
#   sh lessons/lesson5.sh BIN [--model DIR]      (what `make lesson5` runs)
# Writes data/lesson5/, plots/lesson5/, lessons/lesson5.md. The process's RSS is
# measured, so it lives in data/measured/ (`make timing`), which this lesson only includes.
. lessons/lib.sh
lesson_begin 5 "$@"
model_words > "$D/model.md"
model_words_zh > "$D/model.zh.md"
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
# the same rows for the Chinese lesson, headed and labelled in Chinese
{ echo "| 阶段 | 步 | 词元数 T | 已用 KV 字节 | 已预留 KV 字节 | 预留但空着 |"
  tail -n +2 "$D/kv_steps.md" | sed 's/^| prefill |/| 预填充 |/; s/^| decode |/| 解码 |/'; } > "$D/kv_steps.zh.md"

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
# its table with a Chinese header, for lessons/zh/lesson5.md (model names and numbers as they are)
{ echo "| 模型 | 层数 | 头数 | KV 头数 | 头维度 | 上下文长度 | 每个词元的 KV（fp16） | 上下文用满时的 KV |"
  tail -n +2 "$D/kvmem/models.md"; } > "$D/models.zh.md"
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
figure kv_memory.png "KV bytes of the built-in model while it generates: the used bytes lie on the formula's line, the reservation jumps at every doubling" \
    "内置模型生成时 KV 缓存占用的字节（KV-cache memory while generating）：横轴是缓存中的词元数（提示词 + 已生成），纵轴是内存（MiB）；KV used 是已用字节，落在公式（formula，每词元 2·L·C·4 字节）的虚线上；KV reserved 是已预留字节，每次翻倍时向上跳一级"
# The cache as a tensor, with this run's numbers after its last step: tokens held and
# positions reserved (kv_memory.csv), the model's L, NH, hs; float32, 4 bytes.
set -- $(awk -F, -v per="$(value "$V" per_token_b)" "$AWKLIB"'FNR == 1 { header(); next }
    { t = col("tokens"); r = col("kv_reserved_bytes") } END { printf "%d %d\n", t, r / per }' "$D/run/kv_memory.csv")
chart lesson5_cache_tensor "$P/cache_tensor" -e "L=$(value "$V" L); NH=$(value "$V" NH); hs=$(value "$V" hs); T=$1; cap=$2; eb=4"
figure cache_tensor.png "The cache as a tensor, layer by layer: K and V, a row per head, a column per position; one decode step writes one column (orange) in every head of K and V — the layout every memory formula counts" \
    "把缓存画成张量（The KV cache as a tensor）：L 层 × {K, V} × NH 个注意力头 × T 个位置 × hs 个数。每层分 K 和 V，每个头一行（head 0 …），每个位置一列（横轴：缓存中的位置）；蓝色（holds a token）是存着词元的格子，橙色（the last step wrote）是一个解码步在 K 和 V 的每个头里写入的那一列，虚线格（reserved, empty）是预留但空着的位置——每个显存公式数的都是这个布局"
# the models with all heads keeping K and V; the GQA ones have their own figure (gqa.png)
chart kvmem "$P/kvmem_models" -e "in='$D/kvmem/kvmem.csv'; only='gpt2 gpt2-medium gpt2-large gpt2-xl llama-2-7b'"
# Grouped-query attention: the GQA presets' bytes per token (the same kvmem.csv), drawn
# against the tokens a batch holds.
chart lesson5_gqa "$P/gqa" -e "in='$D/kvmem/kvmem.csv'"
figure gqa.png "Grouped-query attention: several query heads read one K/V head (left), so Llama-3-8B, Mistral-7B and Qwen2-7B keep 4 to 9 times fewer bytes per token than a 7B model with all heads (right; arithmetic from their configs): look where each line crosses what an 80 GB GPU has left once Llama-3-8B's 16 GB of fp16 weights are loaded" \
    "分组查询注意力（Grouped-query attention，GQA）：几个查询头（query head，蓝）共用一个 K/V 头（K/V head，缓存保存的就是它）（左图），所以 Llama-3-8B、Mistral-7B 和 Qwen2-7B 每个词元存的字节比所有头都存 K、V 的 7B 模型少 4 到 9 倍（右图，按各自配置计算；横轴是一批共持有的词元数，即批大小 × 上下文长度，纵轴是 fp16 的 KV 缓存 GiB）：看每条线在哪里越过那条灰线：80 GB 显卡装下 Llama-3-8B 的 16 GB fp16 权重之后剩下的空间"
figure kvmem_models.png "KV cache of real models in fp16 vs tokens: LLaMA-2-7B at 2048 tokens against the article's figure (the circle), which forgot the heads" \
    "真实模型的 KV 缓存大小（KV-cache size of real models，fp16，批大小 1）：横轴是缓存中的词元数，纵轴是 KV 缓存（GiB）；LLaMA-2-7B 在 2048 个词元时的大小，对比文章的数字（圆圈：只有一个注意力头的缓存），文章的公式漏掉了注意力头"

lesson_end 5
