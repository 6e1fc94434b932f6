# make slides — plots/slides.pdf: every figure the lessons link, in lesson order, one per
# 16:9 page with its title and a one-line caption (plots/slides.sh). It takes the lessons
# and figures as they are: run `make lessons` (and `make timing`) first to refresh them.
.PHONY: slides
slides: | $(NEED_DEPS)
	@sh plots/slides.sh plots/slides.pdf
