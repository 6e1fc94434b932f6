# The trained model the lessons can run on (kvscope train, issue 16).
#   make model        train it from scratch into data/model/ (--force: a model folder is
#                     replaced only when told to) with 2 OpenMP threads: the King
#                     James Bible from Debian's bible-kjv (public domain), byte tokens, the
#                     shape and schedule below; then `make heads`. Deterministic: the same
#                     bytes of model.safetensors on every run, with 1 or 2 threads. The
#                     committed data/model/ is its output: `make lessons` never retrains.
#   make model RESUME=1  continue an interrupted `make model` from build/model.ckpt
#   make heads        what the trained model's heads do: data/heads/, plots/heads/
#   make corpus       only the corpus: build/corpus/kjv.txt (4,298,239 bytes, sha256 checked)
# MODEL_THREADS=N changes the thread count (not the result).
KJV_SHA256    := 82fa5f3788c6a9a010fb128a0f0bf588984b5888a82058520620eded59b033ea
CORPUS        := build/corpus/kjv.txt
TRAINED       := data/model
MODEL_THREADS ?= 2
# The shape and the schedule of the shipped model (src/train/README.md: The shipped model).
MODEL_SHAPE   := --layers 4 --heads 6 --dim 192 --ctx 256
MODEL_TRAIN   := --batch 16 --steps 2400 --lr 3e-3 --warmup 100 --lr-final 0.1 \
                 --weight-decay 0.1 --clip 1 --init-std 0.08 --seed 1 --eval-every 400 \
                 --bos 255 --short-steps 0 --repeat-share 0.25 --repeat-text 0.5 \
                 --period-min 8 --period-max 128 --heads-every 100

.PHONY: model model-run heads corpus
corpus: $(CORPUS)

# `bible` wraps lines at $COLUMNS - 1: pinned, so the text is the same bytes everywhere.
$(CORPUS):
	@sh .ci/deps.sh bible-kjv
	@mkdir -p $(dir $@)
	COLUMNS=80 bible "Gen1:1-Rev22:21" > $@.tmp
	@echo "$(KJV_SHA256)  $@.tmp" | sha256sum -c --status - || { \
	    echo "corpus: $@.tmp is not the text kvscope was trained on (sha256 differs); bible-kjv changed?" >&2; \
	    rm -f $@.tmp; exit 1; }
	@mv $@.tmp $@

# Training needs OpenMP threads: its own binary in build/omp, as `make bench` does.
model:
	@$(MAKE) --no-print-directory OMP=1 B=build/omp BIN=build/omp/kvscope model-run

model-run: $(BIN) $(CORPUS)
	$(BIN) train --corpus $(CORPUS) --out $(TRAINED) $(MODEL_SHAPE) $(MODEL_TRAIN) \
	    --threads $(MODEL_THREADS) --checkpoint build/model.ckpt --force $(if $(RESUME),--resume,)
	@$(MAKE) --no-print-directory heads

heads: $(BIN)
	$(BIN) heads --model $(TRAINED) --out data/heads --plots plots/heads --quiet
