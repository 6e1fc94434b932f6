# make check-lessons — regenerate every lesson in a scratch copy of the repository and
# fail if a committed lesson, table or figure differs from what the code generates now.
.PHONY: check-lessons
check-lessons: $(BIN)
	@sh lessons/check.sh $(BIN) $(B)
