# kvscope — see README.md. Targets:
#   make             build bin/kvscope
#   make check       build and run every test: the suites (tests/check_*.c, Check), the
#                    lessons, the figures and the explorer page in a browser
#   make test        the unit suites only: no bin/kvscope, no lessons (quick)
#   make check-layers  every #include follows the layers of src/README.md (tests/layers.sh)
#   make check-reading src/engine/README.md's "Read the engine" is what a plain decode step runs (tests/reading.sh)
#   make SAN=1 check the same under AddressSanitizer + UndefinedBehaviorSanitizer
#   make lessons     regenerate every lesson's data/ and plots/
#   make bench       the speed benchmark (prints a table; measured, not tested)
#   make lessons MODEL=DIR  the lessons with a Hugging Face GPT-2 folder's weights
#   make model       train the shipped model from scratch into data/model/, then make heads
#                    (lessons/model.mk; `make lessons` uses the committed one, never retrains)
#   make heads       what the trained model's heads do: data/heads/, plots/heads/
#   make slides      plots/slides.pdf: every lesson's figures, one per 16:9 page (plots/slides.mk)
#   make corpus      only the training text, build/corpus/kjv.txt (Debian's bible-kjv)
#   make fuzz        libFuzzer on the file readers and the option parsers (clang; tests/fuzz/)
#   make test-clang  the kernel, model and training-kernel suites built with clang
#   make examples    examples/*.c, linked with the engine alone (-lm), run and checked
#   make clean
# The set-up targets (check, test, lessons, timing, charts, bench, model, fuzz) install
# missing Debian packages first when run as root (see .ci/deps.sh); a plain `make` only
# builds, so a machine that has the libraries builds without dpkg.

CC      ?= cc
# Debian packages the build, the tests and the charts need.
DEB_PACKAGES := gcc make pkg-config libpng-dev check gnuplot-nox libjansson-dev \
                libutf8proc-dev libgif-dev fonts-wqy-zenhei fonts-dejavu-core libcairo2-dev poppler-utils \
                librsvg2-bin
PKGS    := libpng jansson libutf8proc cairo fontconfig
# MODEL=DIR: a Hugging Face GPT-2 folder (config.json, model.safetensors, vocab.json,
# merges.txt) that the lesson targets pass to kvscope instead of the built-in model.
MODEL   ?=
MODEL_ARGS = $(if $(MODEL),--model $(MODEL),)

CSTD    := -std=c11 -D_XOPEN_SOURCE=700
WARN    := -Wall -Wextra -pedantic
OPT     := -O2
# The compiler never fuses a*b+c into one rounding on its own (clang does by default, gcc
# in its GNU modes): a multiply-add is fused only where the source says fmaf or
# _mm*_fmadd_ps, so the fast kernels equal the plain ones bit for bit with any compiler.
FP      := -ffp-contract=off
# OMP=1 builds with OpenMP threads in the kernels (src/engine/kernels.c; OMP_NUM_THREADS sets how
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
CFLAGS  = $(CSTD) $(WARN) $(OPT) $(FP) $(OPENMP) $(PKG_CFLAGS) $(EXTRA_CFLAGS)
LDFLAGS = $(OPT) $(OPENMP) $(EXTRA_LDFLAGS)

# B (build folder) and BIN can be overridden, e.g. to build twice side by side.
B        ?= build/$(VARIANT)
# The library (src/<layer>/*.c, layers in src/README.md) and the program (src/cli/*.c): only the
# program prints and exits (check-quiet below); the library is also what the tests link.
# Header names are unique across src/, so every file includes a bare "name.h" and INC
# lists each folder.
LIB_DIRS := util engine modelio observe train serve experiments
INC      := $(LIB_DIRS:%=-Isrc/%) -Isrc/cli
MAIN_SRC := src/cli/main.c
CLI_SRC  := $(filter-out $(MAIN_SRC),$(wildcard src/cli/*.c))
LIB_SRC  := $(foreach d,$(LIB_DIRS),$(wildcard src/$(d)/*.c))
LIB_OBJ  := $(LIB_SRC:src/%.c=$(B)/obj/%.o) $(B)/obj/explorer_page.o
CLI_OBJ  := $(CLI_SRC:src/%.c=$(B)/obj/%.o)
MAIN_OBJ := $(MAIN_SRC:src/%.c=$(B)/obj/%.o)
# The explorer page's source (src/observe/explorer/), embedded as C strings at build time.
PAGE_DIR := src/observe/explorer
PAGE_SRC := $(PAGE_DIR)/explorer.html $(PAGE_DIR)/explorer.css $(PAGE_DIR)/explorer.js
LIB      := $(B)/libkvscope.a
CLI_LIB  := $(B)/libkvscope_cli.a
TEST_SRC := $(filter-out tests/check_main.c,$(wildcard tests/check_*.c)) $(wildcard tests/test_*.c)
TEST_OBJ := $(TEST_SRC:tests/%.c=$(B)/tests/%.o) $(B)/tests/check_main.o
ifeq ($(SAN),1)
BIN      ?= $(B)/kvscope
else
BIN      ?= bin/kvscope
endif
TEST_BIN := $(B)/check_kvscope

.PHONY: all deps check test clean lessons bench
all: $(BIN)

# Set-up targets install what they need first; every compile then waits for it.
SETUP_GOALS := check% test lesson% timing% charts% bench% model% heads corpus slides
ifneq ($(filter $(SETUP_GOALS),$(MAKECMDGOALS)),)
NEED_DEPS := deps
endif
deps:
	@sh .ci/deps.sh $(DEB_PACKAGES)

# -MMD -MP: each object lists the headers it included (build/…/*.d), read back below.
DEPFLAGS = -MMD -MP
$(B)/obj/%.o: src/%.c | $(NEED_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) $(INC) -c $< -o $@

$(B)/gen/explorer_page.c: $(PAGE_SRC) $(PAGE_DIR)/embed.sh
	@mkdir -p $(dir $@)
	sh $(PAGE_DIR)/embed.sh $(PAGE_SRC) > $@.tmp && mv $@.tmp $@

$(B)/obj/explorer_page.o: $(B)/gen/explorer_page.c | $(NEED_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) $(INC) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(CLI_LIB): $(CLI_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BIN): $(MAIN_OBJ) $(CLI_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

# Each tests/check_<name>.c exports make_<name>_suite(); the list is generated.
$(B)/tests/suites.h: $(TEST_SRC) | $(NEED_DEPS)
	@mkdir -p $(dir $@)
	@for f in $(filter tests/check_%.c,$(TEST_SRC)); do \
	    n=$$(basename $$f .c); echo "SUITE(make_$${n#check_}_suite)"; done > $@.tmp && mv $@.tmp $@

$(B)/tests/%.o: tests/%.c $(B)/tests/suites.h | $(NEED_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) $(INC) -I$(B)/tests -DKVSCOPE_BIN='"$(BIN)"' -c $< -o $@

$(TEST_BIN): $(TEST_OBJ) $(CLI_LIB) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(PKG_LIBS)

-include $(wildcard $(B)/obj/*.d $(B)/obj/*/*.d $(B)/tests/*.d)

check: check-quiet check-layers check-reading $(BIN) $(TEST_BIN)
	$(TEST_BIN)

# The library never prints or exits (tests/quiet.sh proves it can tell).
.PHONY: check-quiet
check-quiet:
	@sh tests/quiet.sh

# Includes follow the layers of src/README.md: no engine file includes a figure, training,
# serving or cli header, no figure file a training one (tests/layers.sh proves it can tell).
.PHONY: check-layers
check-layers:
	@sh tests/layers.sh

# src/engine/README.md's "Read the engine" is the list of functions one plain decode step
# runs, in order: tests/trace_step.c on the engine built with -finstrument-functions
# (-O0: every function stays one), non-PIE so that addr2line names its addresses.
TRACE_OBJ := $(patsubst src/%.c,$(B)/trace/%.o,$(wildcard src/engine/*.c)) $(B)/trace/util/bigbuf.o
TRACE_CFLAGS = $(CSTD) $(WARN) -O0 -g $(FP) -Isrc/engine -Isrc/util
$(B)/trace/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(TRACE_CFLAGS) -finstrument-functions -c $< -o $@
$(B)/trace/trace_step: tests/trace_step.c $(TRACE_OBJ)
	$(CC) $(TRACE_CFLAGS) -no-pie -o $@ $< $(TRACE_OBJ) -lm
.PHONY: check-reading
check-reading: $(B)/trace/trace_step
	@sh tests/reading.sh $(B)/trace/trace_step

# The engine as a library: each examples/NAME.c linked with src/engine/ and util's bigbuf
# alone (no libpng, cairo, jansson: -lm), then run against bin/kvscope (tests/examples.sh).
ENGINE_OBJ := $(patsubst src/%.c,$(B)/obj/%.o,$(wildcard src/engine/*.c)) $(B)/obj/util/bigbuf.o
EXAMPLES   := $(patsubst examples/%.c,$(B)/examples/%,$(wildcard examples/*.c))
$(B)/examples/%: examples/%.c $(ENGINE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(OPT) $(FP) $(OPENMP) $(EXTRA_CFLAGS) -Isrc/engine -Isrc/util \
	    $(LDFLAGS) -o $@ $< $(ENGINE_OBJ) -lm
.PHONY: examples
examples: $(EXAMPLES) $(BIN)
	@sh tests/examples.sh $(B)/examples $(BIN)
check: examples

# The unit suites alone: every test case but those that run bin/kvscope (tagged "bin").
test: $(TEST_BIN)
	CK_EXCLUDE_TAGS=bin $(TEST_BIN)

# The suites whose fast = plain claims depend on the compiler, built with clang into its
# own folder (fp contraction is clang's default: the build must turn it off). Installs
# clang as root; otherwise .ci/deps.sh prints the apt-get line.
CLANG_SUITES := kernels model train_ops
.PHONY: test-clang
test-clang: deps
	@sh .ci/deps.sh clang
	@$(MAKE) --no-print-directory CC=clang B=build/clang BIN=build/clang/kvscope build/clang/check_kvscope
	@for s in $(CLANG_SUITES); do CK_RUN_SUITE=$$s CK_EXCLUDE_TAGS=bin build/clang/check_kvscope || exit 1; done

# The committed lessons, tables and figures must be what the code generates now
# (lessons/check.sh), and they must look right (tests/figcheck/). Skipped under SAN=1:
# the same code, only slower.
ifneq ($(SAN),1)
check: check-lessons check-figures
endif

# lessons/lessons.mk adds a target per lesson to LESSONS; plots/*.mk add chart targets;
# tests/*/*.mk add bench and fuzz.
LESSONS :=
-include $(sort $(wildcard lessons/*.mk)) $(sort $(wildcard plots/*.mk)) $(sort $(wildcard tests/*/*.mk))

lessons: $(LESSONS)
	@sh lessons/gallery.sh

clean:
	rm -rf build bin
