# tests/fuzz/fuzz.mk — libFuzzer targets (clang, ASan + UBSan), not part of `make check`.
#   make fuzz                     run each target for FUZZ_SECONDS (default 60)
#   make fuzz FUZZ_SECONDS=600    longer
# Targets: fuzz_safetensors (the safetensors reader), fuzz_pretokenize (GPT-2's
# pre-tokenizer). Corpora grow in build/fuzz/corpus-*; a crash leaves
# build/fuzz/crash-* with the input that caused it.
FUZZ_SECONDS ?= 60
FUZZ_B       := build/fuzz
FUZZ_CFLAGS   = -std=c11 -D_XOPEN_SOURCE=700 -g -O1 -fno-omit-frame-pointer \
                -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined $(PKG_CFLAGS) -Isrc

.PHONY: fuzz fuzz-deps
fuzz-deps:
	@sh .ci/deps.sh $(DEB_PACKAGES) clang libclang-rt-dev

$(FUZZ_B)/fuzz_safetensors: tests/fuzz/fuzz_safetensors.c src/safetensors.c src/safetensors.h | fuzz-deps
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) tests/fuzz/fuzz_safetensors.c src/safetensors.c -o $@ $(PKG_LIBS)

$(FUZZ_B)/fuzz_pretokenize: tests/fuzz/fuzz_pretokenize.c src/bpe.c src/bpe.h | fuzz-deps
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) tests/fuzz/fuzz_pretokenize.c src/bpe.c -o $@ $(PKG_LIBS)

fuzz: $(FUZZ_B)/fuzz_safetensors $(FUZZ_B)/fuzz_pretokenize
	@sh tests/fuzz/seeds.sh $(FUZZ_B)/corpus-safetensors
	@mkdir -p $(FUZZ_B)/corpus-pretokenize
	cd $(FUZZ_B) && ./fuzz_safetensors -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -dict=../../tests/fuzz/safetensors.dict -max_len=4096 corpus-safetensors
	cd $(FUZZ_B) && ./fuzz_pretokenize -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -max_len=1024 corpus-pretokenize
