# Lesson 7 — serving many sequences: sh lessons/lesson7.sh rebuilds data/lesson7/ and
# plots/lesson7/ and renders lessons/lesson7.md from lessons/lesson7.md.in.
.PHONY: lesson7
LESSONS += lesson7
lesson7: $(BIN)
	@sh lessons/lesson7.sh $(BIN) $(MODEL_ARGS)
