# make check-browser — the explorer page (kvscope run --html) in a real browser:
# Debian's Chromium, headless, driven by playwright-core (tests/browser/explorer_test.mjs).
# Part of `make check`. Installs chromium and playwright-core itself when it can (see
# tests/browser/run.sh); screenshots go to $(B)/browser/.
.PHONY: check-browser
check-browser: $(BIN)
	@sh tests/browser/run.sh $(BIN) $(B)/browser $(wildcard plots/lesson*/*.html)

check: check-browser

# make explorer-png — the README's screenshot, plots/explorer.png, from the page its
# caption names: lesson 3's (plots/lesson3/explorer.html, written by `make lesson3`) at
# its last decode step, hovering the key the step's query weighs most; in the same
# headless Chromium. Re-run it after the lessons are regenerated.
EXPLORER_PAGE ?= plots/lesson3/explorer.html
.PHONY: explorer-png
explorer-png:
	@[ -f $(EXPLORER_PAGE) ] || { echo "explorer-png: no $(EXPLORER_PAGE): run make lesson3 first" >&2; exit 2; }
	@sh tests/browser/run.sh --screenshot $(EXPLORER_PAGE) plots/explorer.png last -1 max
