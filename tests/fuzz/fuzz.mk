# tests/fuzz/fuzz.mk — libFuzzer targets (clang, ASan + UBSan), not part of `make check`.
#   make fuzz                     build every target and run each for FUZZ_SECONDS (default 60)
#   make fuzz FUZZ_SECONDS=600    longer
#   make fuzz-build               build them only
# Targets (tests/fuzz/fuzz_<name>.c): safetensors (the safetensors reader), pretokenize
# (GPT-2's pre-tokenizer), bpe (vocab.json + merges.txt), config (config.json into a model
# shape: its tensors, closed forms, export's text read back, small models run with and
# without the KV cache), cli (every option kind of the parser, the value parsers and the
# output-folder checks). Each starts from its committed seeds, tests/fuzz/seeds/<name>/,
# with tests/fuzz/<name>.dict where there is one (cli: every option of every command);
# what it finds grows in build/fuzz/corpus-<name>, and a
# crash leaves build/fuzz/crash-* with the input that caused it. The whole library and
# the command line's parsers (all of src/cli/ but main.c) are built with clang's
# instrumentation into build/fuzz/libkvscope.a, so a target links whatever it needs.
FUZZ_SECONDS ?= 60
FUZZ_B       := build/fuzz
FUZZ_TARGETS := safetensors pretokenize bpe config cli
FUZZ_CFLAGS   = -std=c11 -D_XOPEN_SOURCE=700 -g -O1 -fno-omit-frame-pointer \
                -fno-sanitize-recover=undefined $(PKG_CFLAGS) $(INC)
FUZZ_OBJ     := $(LIB_SRC:src/%.c=$(FUZZ_B)/obj/%.o) $(CLI_SRC:src/%.c=$(FUZZ_B)/obj/%.o) \
                $(FUZZ_B)/obj/explorer_page.o
FUZZ_BINS    := $(FUZZ_TARGETS:%=$(FUZZ_B)/fuzz_%)

.PHONY: fuzz fuzz-build fuzz-deps
fuzz-deps:
	@sh .ci/deps.sh $(DEB_PACKAGES) clang libclang-rt-dev

$(FUZZ_B)/obj/%.o: src/%.c | fuzz-deps
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -MMD -MP -fsanitize=fuzzer-no-link,address,undefined -c $< -o $@

$(FUZZ_B)/obj/explorer_page.o: $(B)/gen/explorer_page.c | fuzz-deps
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -c $< -o $@

-include $(wildcard $(FUZZ_B)/obj/*.d $(FUZZ_B)/obj/*/*.d)

$(FUZZ_B)/libkvscope.a: $(FUZZ_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(FUZZ_B)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_B)/libkvscope.a | fuzz-deps
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined $< $(FUZZ_B)/libkvscope.a -o $@ $(PKG_LIBS)

fuzz-build: $(FUZZ_BINS)

# -dict where a target has one; the committed seeds are read, never written
fuzz: $(FUZZ_BINS)
	@for t in $(FUZZ_TARGETS); do \
	    mkdir -p $(FUZZ_B)/corpus-$$t; \
	    dict=; [ -f tests/fuzz/$$t.dict ] && dict=-dict=../../tests/fuzz/$$t.dict; \
	    echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	    (cd $(FUZZ_B) && ./fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 $$dict \
	        -max_len=4096 corpus-$$t ../../tests/fuzz/seeds/$$t) || exit 1; \
	done
