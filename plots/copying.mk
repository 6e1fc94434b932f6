# plots/copying.mk — does the shipped model copy sentences nobody chose (issue 43)?
# `kvscope copying` on three held-out texts, with the whole cache, the article's forgetful
# cache and a 32-token window (src/cli/README.md: kvscope copying):
#   make copying       data/copying/{kjv_val,devil,learner}/ and plots/copying/<the same>/
#     kjv_val  40 sentences of 60–140 bytes from the KJV's validation split (`--val`: the
#              blocks `kvscope train` never trains on), cue 16, window 40
#     devil    40 sentences of 60–140 bytes of another English text, never trained on:
#              Ambrose Bierce's The Devil's Dictionary (1911, public domain; Debian's
#              dict-devil, as build/corpus/devil.txt, sha256 checked), cue 16, window 40
#     learner  the six short sentences of plots/copying_learner.txt (one in Chinese), cue 9
#              bytes (three Chinese characters), the rest of each sentence written
# Deterministic (greedy decoding): the same bytes on every run.
DEVIL_SHA256 := 703d1225d2fb927653bfd8b00e4e96938e0b630c6023edd26702ac6ed50383f8
DEVIL        := build/corpus/devil.txt
COPY_DATA    := data/copying
COPY_PLOTS   := plots/copying

.PHONY: copying
$(DEVIL):
	@sh .ci/deps.sh dict-devil
	@mkdir -p $(dir $@)
	gzip -dc /usr/share/dictd/devil.dict.dz > $@.tmp
	@echo "$(DEVIL_SHA256)  $@.tmp" | sha256sum -c --status - || { \
	    echo "copying: $@.tmp is not the text measured before (sha256 differs); dict-devil changed?" >&2; \
	    rm -f $@.tmp; exit 1; }
	@mv $@.tmp $@

copying: $(BIN) $(CORPUS) $(DEVIL)
	@mkdir -p $(COPY_DATA) $(COPY_PLOTS)
	$(BIN) copying --model $(TRAINED) --text $(CORPUS) --val --out $(COPY_DATA)/kjv_val --plots $(COPY_PLOTS)/kjv_val
	$(BIN) copying --model $(TRAINED) --text $(DEVIL) --out $(COPY_DATA)/devil --plots $(COPY_PLOTS)/devil
	$(BIN) copying --model $(TRAINED) --text plots/copying_learner.txt --min-len 20 --cue 9 \
	    --out $(COPY_DATA)/learner --plots $(COPY_PLOTS)/learner
