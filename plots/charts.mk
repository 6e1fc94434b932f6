# plots/charts.mk — the charts of `kvscope compare`, `kvscope kvmem` and a long `kvscope run`.
#   make charts            FLOPs, prefill vs decode, KV memory of real models, KV growth:
#                          counts and formulas only, the same bytes on every run
#   make charts-measured   time per decode step and process RSS: measured, they differ run
#                          to run, so they have their own names (*_measured.*, git-ignored)
# Each chart is NAME.png (1600x900) and NAME.svg in $(CHART_DIR); the CSVs they are drawn
# from go to $(CHART_DATA)/{compare,kvmem,growth}/. Every variable can be overridden:
#   make charts CHART_DIR=/tmp/c CHART_DATA=/tmp/d COMPARE_ARGS='--lengths 16,64,256'
GNUPLOT      ?= gnuplot
CHART_DIR    ?= plots/charts
CHART_DATA   ?= data/charts
COMPARE_ARGS ?=
REPEAT       ?= 5
GROWTH_STEPS ?= 1000
# gnuplot is needed only to draw; the CSVs are written without it
NEED_GNUPLOT  = @command -v $(GNUPLOT) > /dev/null 2>&1 || { \
    echo "charts: gnuplot not found; the CSVs are in $(CHART_DATA). Install it: apt-get install gnuplot-nox" >&2; exit 1; }
CHART_STYLE   = plots/style.gp

.PHONY: charts charts-measured
charts: $(CHART_DIR)/compare_flops.png $(CHART_DIR)/prefill_decode.png \
        $(CHART_DIR)/kvmem_models.png $(CHART_DIR)/kv_memory.png

# --- data ---------------------------------------------------------------------------
# compare.csv and prefill_decode.csv are deterministic; --repeat 1 keeps this quick
# (its timing.csv is not used by `charts`).
$(CHART_DATA)/compare/compare.csv: $(BIN)
	@mkdir -p $(CHART_DATA)
	$(BIN) compare --quiet --repeat 1 --out $(CHART_DATA)/compare $(COMPARE_ARGS)
$(CHART_DATA)/compare/prefill_decode.csv: $(CHART_DATA)/compare/compare.csv

$(CHART_DATA)/kvmem/kvmem.csv: $(BIN)
	@mkdir -p $(CHART_DATA)
	$(BIN) kvmem --out $(CHART_DATA)/kvmem > /dev/null

$(CHART_DATA)/growth/kv_memory.csv: $(BIN)
	@mkdir -p $(CHART_DATA)
	$(BIN) run --prompt-ids 1,2,3,4 --steps $(GROWTH_STEPS) --record kv,timing --out $(CHART_DATA)/growth --quiet

# --- charts -------------------------------------------------------------------------
$(CHART_DIR)/compare_flops.png: $(CHART_DATA)/compare/compare.csv plots/flops.gp $(CHART_STYLE)
	$(NEED_GNUPLOT)
	@mkdir -p $(CHART_DIR)
	$(GNUPLOT) -e "in='$<'; out='$(basename $@)'" plots/flops.gp

$(CHART_DIR)/prefill_decode.png: $(CHART_DATA)/compare/prefill_decode.csv plots/prefill_decode.gp $(CHART_STYLE)
	$(NEED_GNUPLOT)
	@mkdir -p $(CHART_DIR)
	$(GNUPLOT) -e "in='$<'; out='$(basename $@)'" plots/prefill_decode.gp

$(CHART_DIR)/kvmem_models.png: $(CHART_DATA)/kvmem/kvmem.csv plots/kvmem.gp $(CHART_STYLE)
	$(NEED_GNUPLOT)
	@mkdir -p $(CHART_DIR)
	$(GNUPLOT) -e "in='$<'; out='$(basename $@)'" plots/kvmem.gp

$(CHART_DIR)/kv_memory.png: $(CHART_DATA)/growth/kv_memory.csv plots/kv_memory.gp $(CHART_STYLE)
	$(NEED_GNUPLOT)
	@mkdir -p $(CHART_DIR)
	$(GNUPLOT) -e "in='$<'; out='$(basename $@)'" plots/kv_memory.gp

# --- measured: always re-measured ---------------------------------------------------
charts-measured: $(BIN) $(CHART_DATA)/growth/kv_memory.csv
	$(NEED_GNUPLOT)
	@mkdir -p $(CHART_DIR) $(CHART_DATA)
	$(BIN) compare --repeat $(REPEAT) --out $(CHART_DATA)/compare $(COMPARE_ARGS)
	$(GNUPLOT) -e "in='$(CHART_DATA)/compare/timing.csv'; out='$(CHART_DIR)/compare_time_measured'" plots/time.gp
	$(BIN) run --prompt-ids 1,2,3,4 --steps $(GROWTH_STEPS) --record kv,timing --out $(CHART_DATA)/growth --quiet
	$(GNUPLOT) -e "in='$(CHART_DATA)/growth/kv_memory.csv'; rss='$(CHART_DATA)/growth/timing.csv'; out='$(CHART_DIR)/kv_memory_measured'" plots/kv_memory.gp
