# lessons/lessons.mk — make lessonN, one rule for every lesson: sh lessons/lessonN.sh
# rebuilds data/lessonN/ and plots/lessonN/ and renders lessons/lessonN.md from
# lessons/lessonN.md.in. The attention lessons run on the trained model (LESSON_MODEL,
# data/model/: lessons/model.mk); lessons 4 and 5, about GPT-2 small's costs, on the
# built-in model with its widths. MODEL=DIR gives every lesson a Hugging Face GPT-2
# folder's weights instead. `make lessons` runs them all, then writes the gallery.
LESSON_MODEL    ?= data/model
BUILTIN_LESSONS := 4 5
lesson_args = $(if $(MODEL),--model $(MODEL),$(if $(filter $(1),$(BUILTIN_LESSONS)),,--model $(LESSON_MODEL)))
LESSON_SCRIPTS := $(sort $(wildcard lessons/lesson[0-9]*.sh))
LESSONS += $(LESSON_SCRIPTS:lessons/%.sh=%)
.PHONY: $(LESSON_SCRIPTS:lessons/%.sh=%)
$(LESSON_SCRIPTS:lessons/%.sh=%): lesson%: $(BIN)
	@sh lessons/lesson$*.sh $(BIN) $(call lesson_args,$*)
