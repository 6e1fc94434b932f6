# make bench — the speed benchmark: tests/bench/bench.c (the C harness) driven by
# tests/bench/bench.py, which also times PyTorch (Debian's python3-torch, installed
# here, not by the default build) and OpenBLAS, and prints the tables. Measured, not
# tested: nothing it prints is committed. BENCH_ARGS=--quick runs one round;
# BENCH_ARGS="--quick --side-by-side" only the side-by-side table (one round). Optional,
# side by side: LLAMA_BENCH=path/to/llama-bench with LLAMA_MODEL_F32=… LLAMA_MODEL_F16=…
# (GGUF files of GPT-2 small's shapes), or GGML_GPT2=path/to/gpt-2-backend with
# GGML_MODEL_F32=… GGML_MODEL_F16=… (see tests/bench/bench.py).
BENCH_BIN := $(B)/bench_kvscope

# llama.cpp is found by itself where `sh ../shared/bench/llamacpp/build.sh build/llamacpp`
# leaves it (src/engine/README.md: "llama.cpp side by side"); LLAMA_DIR=… points elsewhere, LLAMA_BENCH=
# (empty) leaves it out. Nothing there: the bench runs without it.
LLAMA_DIR ?= build/llamacpp
LLAMA_BENCH ?= $(abspath $(wildcard $(LLAMA_DIR)/src/build/bin/llama-bench))
LLAMA_MODEL_F32 ?= $(abspath $(wildcard $(LLAMA_DIR)/gpt2-f32.gguf))
LLAMA_MODEL_F16 ?= $(abspath $(wildcard $(LLAMA_DIR)/gpt2-f16.gguf))
LLAMA_BATCHED_BENCH ?= $(abspath $(wildcard $(LLAMA_DIR)/src/build/bin/llama-batched-bench))
export LLAMA_BENCH LLAMA_MODEL_F32 LLAMA_MODEL_F16 LLAMA_BATCHED_BENCH

$(BENCH_BIN): tests/bench/bench.c $(LIB)
	$(CC) $(CFLAGS) $(INC) -o $@ $< $(LIB) $(LDFLAGS) $(PKG_LIBS)

# The bench measures 1 and 2 threads, so it builds its own OpenMP binary in build/bench.
.PHONY: bench bench-run
bench:
	@$(MAKE) --no-print-directory OMP=1 B=build/bench BIN=build/bench/kvscope bench-run bench-train-run

bench-run: $(BENCH_BIN) $(BIN)
	@sh .ci/deps.sh python3-torch python3-numpy libopenblas0-pthread
	/usr/bin/python3 tests/bench/bench.py --bin $(BENCH_BIN) --kvscope $(BIN) $(BENCH_ARGS)

# The side-by-side table alone, one round: kvscope's steps against llama.cpp (found as
# above, or given) or ggml; a few minutes instead of make bench's hour.
.PHONY: bench-side bench-side-run
bench-side:
	@$(MAKE) --no-print-directory OMP=1 B=build/bench BIN=build/bench/kvscope bench-side-run

bench-side-run: $(BENCH_BIN)
	/usr/bin/python3 tests/bench/bench.py --bin $(BENCH_BIN) --quick --side-by-side

# Batched decode alone (B = 1 .. 64, 1 and 2 threads) against llama-batched-bench, with the
# FMA peak in the same rounds: BENCH_ARGS="--rounds R" for more than 3.
.PHONY: bench-batched bench-batched-run
bench-batched:
	@$(MAKE) --no-print-directory OMP=1 B=build/bench BIN=build/bench/kvscope bench-batched-run

bench-batched-run: $(BENCH_BIN) $(BIN)
	/usr/bin/python3 tests/bench/bench.py --bin $(BENCH_BIN) --kvscope $(BIN) --batched $(BENCH_ARGS)
