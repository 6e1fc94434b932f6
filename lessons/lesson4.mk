# Lesson 4: sh lessons/lesson4.sh rebuilds data/lesson4/ and plots/lesson4/ and renders
# lessons/lesson4.md from lessons/lesson4.md.in.
.PHONY: lesson4
LESSONS += lesson4
lesson4: $(BIN)
	@sh lessons/lesson4.sh $(BIN) $(MODEL_ARGS)
