# kvscope — see README.md. Targets:
#   make             build bin/kvscope
#   make check       build and run the test suite (tests/check_*.c, Check)
#   make SAN=1 check the same under AddressSanitizer + UndefinedBehaviorSanitizer
#   make lessons     regenerate every lesson's data/ and plots/
#   make bench       the speed benchmark (prints a table; measured, not tested)
#   make lessons MODEL=DIR  the lessons with a Hugging Face GPT-2 folder's weights
#   make fuzz        libFuzzer on the file readers and the option parsers (clang; tests/fuzz/)
#   make clean
# Missing Debian packages are installed first when run as root (see .ci/deps.sh).

CC      ?= cc
# Debian packages the build, the tests and the charts need.
DEB_PACKAGES := gcc make pkg-config libpng-dev check gnuplot-nox libjansson-dev \
                libutf8proc-dev libgif-dev fonts-wqy-zenhei libcairo2-dev poppler-utils \
                librsvg2-bin
PKGS    := libpng jansson libutf8proc cairo fontconfig
# MODEL=DIR: a Hugging Face GPT-2 folder (config.json, model.safetensors, vocab.json,
# merges.txt) that the lesson targets pass to kvscope instead of the built-in model.
MODEL   ?=
MODEL_ARGS = $(if $(MODEL),--model $(MODEL),)

CSTD    := -std=c11 -D_XOPEN_SOURCE=700
WARN    := -Wall -Wextra -pedantic
OPT     := -O2
# OMP=1 builds with OpenMP threads in the kernels (src/kernels.c; OMP_NUM_THREADS sets how
# many). Results do not depend on it; `make bench` always builds this way.
OPENMP  := $(if $(filter 1,$(OMP)),-fopenmp,)
# WERROR=1 makes warnings errors (CI sets it).
ifeq ($(WERROR),1)
WARN    += -Werror
endif
# SAN=1 builds everything with ASan + UBSan into build/san.
ifeq ($(SAN),1)
VARIANT := san
OPT     := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
else
VARIANT := release
endif

# '=' on purpose: pkg-config runs when a recipe needs it, after 'deps' installed it.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS   = $(shell pkg-config --libs $(PKGS)) -lgif -lm
CHECK_LIBS = $(shell pkg-config --libs check)
CFLAGS  = $(CSTD) $(WARN) $(OPT) $(OPENMP) $(PKG_CFLAGS) $(EXTRA_CFLAGS)
LDFLAGS = $(OPT) $(OPENMP) $(EXTRA_LDFLAGS)

# B (build folder) and BIN can be overridden, e.g. to build twice side by side.
B        ?= build/$(VARIANT)
SRC      := $(filter-out src/main.c,$(wildcard src/*.c))
OBJ      := $(SRC:src/%.c=$(B)/obj/%.o)
# The explorer page's source (src/explorer/), embedded as C strings at build time.
PAGE_SRC := src/explorer/explorer.html src/explorer/explorer.css src/explorer/explorer.js
OBJ      += $(B)/obj/explorer_page.o
LIB      := $(B)/libkvscope.a
TEST_SRC := $(filter-out tests/check_main.c,$(wildcard tests/check_*.c)) $(wildcard tests/test_*.c)
TEST_OBJ := $(TEST_SRC:tests/%.c=$(B)/tests/%.o) $(B)/tests/check_main.o
ifeq ($(SAN),1)
BIN      ?= $(B)/kvscope
else
BIN      ?= bin/kvscope
endif
TEST_BIN := $(B)/check_kvscope

.PHONY: all deps check clean lessons bench
all: $(BIN)

deps:
	@sh .ci/deps.sh $(DEB_PACKAGES)

$(B)/obj/%.o: src/%.c $(wildcard src/*.h) | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(B)/gen/explorer_page.c: $(PAGE_SRC) src/explorer/embed.sh
	@mkdir -p $(dir $@)
	sh src/explorer/embed.sh $(PAGE_SRC) > $@.tmp && mv $@.tmp $@

$(B)/obj/explorer_page.o: $(B)/gen/explorer_page.c src/explorer_page.h | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Isrc -c $< -o $@

$(LIB): $(OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BIN): $(B)/obj/main.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

# Each tests/check_<name>.c exports make_<name>_suite(); the list is generated.
$(B)/tests/suites.h: $(TEST_SRC) | deps
	@mkdir -p $(dir $@)
	@for f in $(filter tests/check_%.c,$(TEST_SRC)); do \
	    n=$$(basename $$f .c); echo "SUITE(make_$${n#check_}_suite)"; done > $@.tmp && mv $@.tmp $@

$(B)/tests/%.o: tests/%.c $(wildcard tests/*.h) $(wildcard src/*.h) $(B)/tests/suites.h | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Isrc -I$(B)/tests -DKVSCOPE_BIN='"$(BIN)"' -c $< -o $@

$(TEST_BIN): $(TEST_OBJ) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(PKG_LIBS)

check: $(BIN) $(TEST_BIN)
	$(TEST_BIN)

# The committed lessons, tables and figures must be what the code generates now
# (lessons/check.sh), and they must look right (tests/figcheck/). Skipped under SAN=1:
# the same code, only slower.
ifneq ($(SAN),1)
check: check-lessons check-figures
endif

# Each lessons/lessonN.mk adds its target to LESSONS; plots/*.mk add chart targets;
# tests/*/*.mk add bench and fuzz.
LESSONS :=
-include $(sort $(wildcard lessons/*.mk)) $(sort $(wildcard plots/*.mk)) $(sort $(wildcard tests/*/*.mk))

lessons: $(LESSONS)
	@sh lessons/gallery.sh

clean:
	rm -rf build bin
