#!/bin/sh
# utf8.sh — every lesson file is valid UTF-8 (what `make check-utf8`, part of `make check`,
# runs): lessons/*.md, lessons/zh/*.md and their templates. A byte the tool writes into a
# lesson (a token's byte in a table) goes through AWKLIB's bytelabel (lessons/lib.sh), which
# shows a byte that is not UTF-8 on its own as ⟨255⟩; a raw one renders as � and makes the
# file unreadable to tools that expect UTF-8. Prints one line per bad line (file:line) and
# fails; first it proves it can tell, on a line it makes bad itself.
#   sh lessons/utf8.sh [FILE...]        (default: every lesson file)
set -eu
bad_lines() { LC_ALL=C.UTF-8 grep -naxv '.*' "$1" | cut -d: -f1; }
probe=$(printf 'fine\n| 0 | `\377` |\n' | LC_ALL=C.UTF-8 grep -naxv '.*' | cut -d: -f1 || true)
if [ "$probe" != 2 ]; then
    echo "check-utf8: this grep cannot tell a line that is not UTF-8 (the C.UTF-8 locale is missing?)" >&2
    exit 1
fi
[ $# -gt 0 ] || set -- lessons/*.md lessons/*.md.in lessons/zh/*.md lessons/zh/*.md.in
fail=0
for f; do
    [ -f "$f" ] || continue
    for n in $(bad_lines "$f" || true); do
        echo "check-utf8: $f:$n is not valid UTF-8" >&2
        fail=1
    done
done
[ $fail = 0 ] || exit 1
echo "check-utf8: $# lesson files are valid UTF-8"
