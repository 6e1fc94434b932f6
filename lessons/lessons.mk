# lessons/lessons.mk — make lessonN, one rule for every lesson: sh lessons/lessonN.sh
# rebuilds data/lessonN/ and plots/lessonN/ and renders lessons/lessonN.md from
# lessons/lessonN.md.in (MODEL=DIR: with a Hugging Face GPT-2 folder's weights).
# `make lessons` runs them all, then writes the gallery.
LESSON_SCRIPTS := $(sort $(wildcard lessons/lesson[0-9]*.sh))
LESSONS += $(LESSON_SCRIPTS:lessons/%.sh=%)
.PHONY: $(LESSON_SCRIPTS:lessons/%.sh=%)
$(LESSON_SCRIPTS:lessons/%.sh=%): lesson%: $(BIN)
	@sh lessons/lesson$*.sh $(BIN) $(MODEL_ARGS)
