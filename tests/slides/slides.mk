# make check-slides — the lecture deck (make slides) as a projector shows it: every text
# at least 18 px at 1280 × 720, every linked figure on a page, every caption whole (page
# text and notes together), a note per page, and bad input stopping make slides cleanly (tests/slides/slidecheck.sh).
# Part of `make check` (not under SAN=1: it reads the committed lessons and figures).
.PHONY: check-slides
check-slides: $(FIGTEXT_BIN)
	@sh tests/slides/slidecheck.sh $(FIGTEXT_BIN)

ifneq ($(SAN),1)
check: check-slides
endif
