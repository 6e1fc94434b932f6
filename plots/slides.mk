# make slides — plots/slides.pdf, the lecture deck (16:9 pages), and its speaker notes,
# plots/slides.notes.md (plots/slides.sh): a title page, an outline, per lesson a divider,
# every figure the lesson links with its caption (the whole of it in the notes when the
# page shows 3 lines of it), take-aways, questions and answers; a closing summary and Q&A;
# references at the end. The lecture's own text is lessons/deck.md. It takes the lessons
# and figures as they are: run `make lessons` (and `make timing`) first to refresh them.
# Checked by `make check-slides` (tests/slides/).
.PHONY: slides
slides: | $(NEED_DEPS)
	@sh plots/slides.sh plots/slides.pdf
