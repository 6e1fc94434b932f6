# Lesson 3: sh lessons/lesson3.sh rebuilds data/lesson3/ and plots/lesson3/ and renders
# lessons/lesson3.md from lessons/lesson3.md.in.
.PHONY: lesson3
LESSONS += lesson3
lesson3: $(BIN)
	@sh lessons/lesson3.sh $(BIN) $(MODEL_ARGS)
