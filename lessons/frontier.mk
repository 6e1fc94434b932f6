# lessons/frontier.mk — one quality-per-byte frontier over every KV lever (issue 48).
#   make frontier     kvscope frontier on the trained model and the KJV validation split
#                     (16 texts of 256 tokens, 16 copy texts), then its chart:
#                     build/frontier/*.csv and build/frontier/frontier.png, .svg
#                     (scratch output; lesson 9 commits the same measurement under data/)
# Lesson 9 reads the corpus too, so it needs it built (make corpus: Debian's bible-kjv).
# The corpus by its path: model.mk, which names it CORPUS, is read after this file, and a
# prerequisite is expanded when its line is read.
FRONTIER_OUT := build/frontier
.PHONY: frontier
frontier: $(BIN) build/corpus/kjv.txt | $(NEED_DEPS)
	OMP_NUM_THREADS=1 $(BIN) frontier --model $(LESSON_MODEL) --corpus $(CORPUS) --out $(FRONTIER_OUT) --force
	gnuplot -e "in='$(FRONTIER_OUT)/frontier.csv'; out='$(FRONTIER_OUT)/frontier'" plots/frontier.gp
	@echo "frontier: wrote $(FRONTIER_OUT)/frontier.csv and frontier.png"
lesson9: build/corpus/kjv.txt
