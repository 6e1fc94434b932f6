# make timing — measure time per decode step (with and without the cache) and the
# process RSS into data/measured/. Measured, so never part of `make lessons`; lessons 4
# and 5 include the committed results. Takes about a minute.
.PHONY: timing
timing: $(BIN)
	@sh lessons/timing.sh $(BIN)
