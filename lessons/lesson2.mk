# Lesson 2: sh lessons/lesson2.sh rebuilds data/lesson2/ and plots/lesson2/ and renders
# lessons/lesson2.md from lessons/lesson2.md.in.
.PHONY: lesson2
LESSONS += lesson2
lesson2: $(BIN)
	@sh lessons/lesson2.sh $(BIN) $(MODEL_ARGS)
