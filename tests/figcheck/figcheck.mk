# make check-figures — render every committed SVG with librsvg and compare it with its PNG
# twin; check the size of every PNG and the title of every heatmap (tests/figcheck/).
# Part of `make check` (not under SAN=1: it reads the committed files, not the code).
FIGCHECK_BIN := $(B)/figcheck

$(FIGCHECK_BIN): tests/figcheck/figcheck.c | $(NEED_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LDFLAGS) $(PKG_LIBS)

.PHONY: check-figures
check-figures: $(FIGCHECK_BIN)
	@sh tests/figcheck/figcheck.sh $(FIGCHECK_BIN)
