# Lesson 1: sh lessons/lesson1.sh rebuilds data/lesson1/ and plots/lesson1/ and renders
# lessons/lesson1.md from lessons/lesson1.md.in.
.PHONY: lesson1
LESSONS += lesson1
lesson1: $(BIN)
	@sh lessons/lesson1.sh $(BIN) $(MODEL_ARGS)
