# make check-browser — the explorer page (kvscope run --html) in a real browser:
# Debian's Chromium, headless, driven by playwright-core (tests/browser/explorer_test.mjs).
# Part of `make check`. Installs chromium and playwright-core itself when it can (see
# tests/browser/run.sh); screenshots go to $(B)/browser/.
.PHONY: check-browser
check-browser: $(BIN)
	@sh tests/browser/run.sh $(BIN) $(B)/browser $(wildcard plots/lesson*/*.html)

check: check-browser
