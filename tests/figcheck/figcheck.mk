# make check-figures — render every committed SVG with librsvg and compare it with its PNG
# twin; check the size of every PNG, the title of every heatmap, and every SVG's text:
# none under 18 px when the figure fills a 1280×720 slide, none overlapping another (figtext; tests/figcheck/).
# Part of `make check` (not under SAN=1: it reads the committed files, not the code).
FIGCHECK_BIN := $(B)/figcheck
FIGTEXT_BIN := $(B)/figtext

$(FIGCHECK_BIN): tests/figcheck/figcheck.c | $(NEED_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LDFLAGS) $(PKG_LIBS)

$(FIGTEXT_BIN): tests/figcheck/figtext.c | $(NEED_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $<

.PHONY: check-figures
check-figures: $(FIGCHECK_BIN) $(FIGTEXT_BIN)
	@sh tests/figcheck/figcheck.sh $(FIGCHECK_BIN) $(FIGTEXT_BIN)
