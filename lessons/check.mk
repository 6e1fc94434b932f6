# make check-lessons — regenerate every lesson in a scratch copy of the repository and
# fail if a committed lesson, table or figure differs from what the code generates now;
# then check that every lesson's Chinese twin (lessons/zh/) shows all its English one does,
# that every term a lesson links to the glossary has its entry there (glossary.sh), and
# that the Chinese lessons say each concept with the one word the zh glossary chose (terms.sh).
.PHONY: check-lessons check-twins
check-lessons: $(BIN)
	@sh lessons/check.sh $(BIN) $(B)
	@sh lessons/twins.sh
	@sh lessons/glossary.sh
	@sh lessons/terms.sh
check-twins:
	@sh lessons/twins.sh
	@sh lessons/glossary.sh
	@sh lessons/terms.sh

# make check-utf8 — every lesson file is valid UTF-8 (lessons/utf8.sh). Part of make check.
.PHONY: check-utf8
check-utf8:
	@sh lessons/utf8.sh
check: check-utf8
