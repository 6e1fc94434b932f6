# Lesson 6 — keeping the cache in budget: regenerates data/lesson6/, plots/lesson6/
# and lessons/lesson6.md.
.PHONY: lesson6
LESSONS += lesson6
lesson6: $(BIN)
	@sh lessons/lesson6.sh $(BIN) $(MODEL_ARGS)
