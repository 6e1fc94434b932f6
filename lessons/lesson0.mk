# Placeholder until the lessons exist: one run into data/run.
.PHONY: lesson0
LESSONS += lesson0
lesson0: $(BIN)
	$(BIN) run --prompt "The KV cache" --steps 8 --out data/run --quiet
