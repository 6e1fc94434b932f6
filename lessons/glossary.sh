#!/bin/sh
# glossary.sh — does every term a lesson links to the glossary have its entry there?
#   sh lessons/glossary.sh            (run by `make check-lessons`, after twins.sh)
# A lesson marks a term by linking it: [roofline](glossary.md#roofline). Each entry of
# lessons/glossary.md starts with <a id="ID"></a>, and lessons/zh/glossary.md has the same
# IDs in the same order. Fails, naming the lesson and the ID, when a lesson (English or
# Chinese, template or rendered) links an ID its glossary lacks, or when the two glossaries'
# entries differ.
set -eu
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvscope-glossary.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
status=0
fail() { echo "glossary: $*" >&2; status=1; }
ids() { sed -n 's/^<a id="\([a-z0-9-]*\)"><\/a>.*/\1/p' "$1"; }
# links FILE: the IDs FILE links in glossary.md, one a line
links() { grep -o 'glossary\.md#[a-z0-9-]*' "$1" | sed 's/.*#//' || true; }
# check GLOSSARY FILES...: every ID the files link is an entry of GLOSSARY
check() {
    g=$1; shift
    ids "$g" | sort -u > "$tmp/ids"
    for f in "$@"; do
        [ -f "$f" ] || continue
        for id in $(links "$f" | sort -u); do
            grep -qx "$id" "$tmp/ids" || fail "$f links glossary.md#$id, which $g has no entry for"
        done
    done
}
# First, show that the check catches a link to a missing entry: one that cannot fail
# would pass every lesson.
printf '<a id="ridge"></a>**ridge** — where the roofs meet.\n' > "$tmp/g.md"
printf 'See the [ridge](glossary.md#ridge) and the [roof](glossary.md#roofline).\n' > "$tmp/l.md"
check "$tmp/g.md" "$tmp/l.md" 2> "$tmp/self.out" || true
if [ $status -eq 0 ] || ! grep -q "glossary.md#roofline" "$tmp/self.out" || grep -q "#ridge," "$tmp/self.out"; then
    echo "glossary: the check missed a planted link to a missing entry; it cannot be trusted" >&2
    exit 2
fi
status=0
check lessons/glossary.md lessons/lesson*.md.in lessons/lesson*.md
check lessons/zh/glossary.md lessons/zh/lesson*.md.in lessons/zh/lesson*.md
n=$(sed -n '/^## Words/,/^## /p' lessons/glossary.md | grep -c '^\*\*' || true)
[ "$n" -eq 0 ] || fail "lessons/glossary.md has $n entries without <a id=\"…\"></a> in front"
ids lessons/glossary.md > "$tmp/en"; ids lessons/zh/glossary.md > "$tmp/zh"
cmp -s "$tmp/en" "$tmp/zh" || { fail "lessons/zh/glossary.md's entries differ from lessons/glossary.md's (< English, > Chinese):"; diff "$tmp/en" "$tmp/zh" | head -n 10 >&2; }
if [ $status -ne 0 ]; then
    echo "glossary: add the entry (with its <a id>) to both glossaries, or fix the link" >&2
    exit 1
fi
echo "glossary: every term the lessons link has its entry, in English and in Chinese ($(wc -l < "$tmp/en") entries; the check caught a planted missing one)"
