# The training row of `make bench`: tests/bench/bench_train.c (kvscope's optimizer steps)
# driven by tests/bench/bench_train.py, which also trains the same model in PyTorch and
# checks kvscope's gradients against PyTorch's autograd. bench.mk's `bench` runs it.
BENCH_TRAIN_BIN := $(B)/bench_train

$(BENCH_TRAIN_BIN): tests/bench/bench_train.c $(LIB)
	$(CC) $(CFLAGS) $(INC) -o $@ $< $(LIB) $(LDFLAGS) $(PKG_LIBS)

.PHONY: bench-train-run
bench-train-run: $(BENCH_TRAIN_BIN) $(BIN)
	@sh .ci/deps.sh python3-torch python3-numpy libopenblas0-pthread
	/usr/bin/python3 tests/bench/bench_train.py --bin $(BENCH_TRAIN_BIN) --kvscope $(BIN) $(BENCH_ARGS)
