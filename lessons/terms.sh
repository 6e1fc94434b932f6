#!/bin/sh
# terms.sh — does every Chinese lesson say each concept with the one word the glossary chose?
#   sh lessons/terms.sh            (run by `make check-lessons`, after glossary.sh)
# lessons/zh/glossary.md shows readers, under **中英术语对照**, the chosen word of each
# concept; the words each concept rejects are for maintainers, in an HTML comment after that
# list (a reader never sees it), one concept a line:
#     - 驱逐；不用：淘汰、逐出
# the chosen word first, then after "；不用：" the rejected spellings, separated by "、":
# plain text, or in backticks an extended regular expression (`第 [0-9]+ 个头`). Any line
# of that form counts, in the comment or not. Fails,
# naming the file, the line, the rejected spelling and the chosen word, when a Chinese
# lesson (template, its {{…}} directives read as 0, and rendered page), the glossary
# itself or lessons/zh/README-section.md uses a rejected spelling outside code blocks,
# inline code, HTML comments and quotations (> …: the articles are quoted as written).
set -eu
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvscope-terms.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
status=0
fail() { echo "terms: $*" >&2; status=1; }

# rules GLOSSARY: one line per rejected spelling, "kind<TAB>pattern<TAB>chosen word",
# kind F (fixed text) or E (extended regular expression)
rules() {
    LC_ALL=C.UTF-8 awk '
    /^- .*；不用：/ {
        s = substr($0, 3); chosen = s; sub(/（.*/, "", chosen); sub(/；不用：.*/, "", chosen)
        v = s; sub(/.*；不用：/, "", v); sub(/[ \t]+$/, "", v); sub(/。$/, "", v)
        n = split(v, a, "、")
        for (i = 1; i <= n; i++) {
            p = a[i]; gsub(/^[ \t]+|[ \t]+$/, "", p)
            if (p == "") continue
            if (p ~ /^`.*`$/) print "E\t" substr(p, 2, length(p) - 2) "\t" chosen
            else print "F\t" p "\t" chosen
        }
    }' "$1"
}

# prose FILE: the file with code blocks, inline code, HTML comments (whole lines from
# <!-- to -->), quotations and the glossary's own term lines blanked (line numbers kept),
# {{…}} directives read as 0
prose() {
    LC_ALL=C.UTF-8 awk '
    !code && !note && /^[ \t]*<!--/ { note = 1 }
    note { if (/-->/) note = 0; print ""; next }
    /^[ \t]*```/ { code = !code; print ""; next }
    code || /^[ \t]*>/ || /；不用：/ { print ""; next }
    { s = $0; gsub(/\{\{[^}]*\}\}/, "0", s); gsub(/`[^`]*`/, "", s); print s }' "$1"
}

# check GLOSSARY FILES...: every use of a rejected spelling in FILES
check() {
    rules "$1" > "$tmp/rules"
    [ -s "$tmp/rules" ] || { fail "$1 lists no rejected spellings (no \"- 词（…）；不用：…\" line)"; return; }
    shift
    for f in "$@"; do
        [ -f "$f" ] || continue
        prose "$f" > "$tmp/prose"
        while IFS='	' read -r kind pat chosen; do
            if [ "$kind" = E ]; then opt=-nE; else opt=-nF; fi
            grep $opt -- "$pat" "$tmp/prose" > "$tmp/hits" || continue
            while IFS= read -r hit; do
                fail "$f:${hit%%:*}: \"$pat\" where the glossary chose \"$chosen\""
            done < "$tmp/hits"
        done < "$tmp/rules"
    done
}

# First, show that the check catches a rejected spelling, fixed and by pattern, and lets
# code blocks, inline code, HTML comments and quotations through: one that cannot fail would pass every
# lesson.
printf -- '- 驱逐（evict）；不用：淘汰、逐出\n- 头的编号：h 号头；不用：`第 [0-9]+ 个头`\n' > "$tmp/g.md"
printf '窗口把它驱逐。\n\n窗口把位置 3 淘汰了。\n\n```text\n淘汰 第 4 个头\n```\n\n> 原文：淘汰\n\n第 {{value x y}} 个头，`淘汰`。\n<!--\n淘汰\n-->\n' > "$tmp/l.md"
check "$tmp/g.md" "$tmp/l.md" 2> "$tmp/self.out" || true
if [ $status -eq 0 ] || [ "$(wc -l < "$tmp/self.out")" -ne 2 ] \
    || ! grep -q 'l.md:3: "淘汰" where the glossary chose "驱逐"' "$tmp/self.out" \
    || ! grep -q 'l.md:11: "第 \[0-9\]+ 个头"' "$tmp/self.out"; then
    cat "$tmp/self.out" >&2
    echo "terms: the check missed a planted rejected spelling, or flagged code or a quotation; it cannot be trusted" >&2
    exit 2
fi
status=0
check lessons/zh/glossary.md lessons/zh/lesson*.md.in lessons/zh/lesson*.md lessons/zh/glossary.md lessons/zh/README-section.md
if [ $status -ne 0 ]; then
    echo "terms: use the glossary's word (lessons/zh/glossary.md, 中英术语对照), in lessons/zh/*.md.in or the lesson script's Chinese text, and run: make lessons" >&2
    exit 1
fi
echo "terms: every Chinese lesson uses the glossary's word for each of its $(wc -l < "$tmp/rules") rejected spellings (the check caught a planted one)"
