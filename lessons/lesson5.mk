# Lesson 5: sh lessons/lesson5.sh rebuilds data/lesson5/ and plots/lesson5/ and renders
# lessons/lesson5.md from lessons/lesson5.md.in.
.PHONY: lesson5
LESSONS += lesson5
lesson5: $(BIN)
	@sh lessons/lesson5.sh $(BIN) $(MODEL_ARGS)
