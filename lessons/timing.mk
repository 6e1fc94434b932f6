# make timing — measure time per decode step (with and without the cache) and the
# process RSS into data/measured/, then re-render lessons 4 and 5, which include them.
# Measured, so never part of `make lessons`. Takes a few minutes. The roofline's roof (FMA
# peak, memory bandwidth) is measured by tests/bench's binary, built here.
.PHONY: timing timing-charts
timing: $(BIN) $(B)/bench_kvscope
	@BENCH=$(B)/bench_kvscope sh lessons/timing.sh $(BIN)
# Redraw plots/measured/ from data/measured/ without measuring again.
timing-charts: $(BIN)
	@sh lessons/timing.sh $(BIN) charts
