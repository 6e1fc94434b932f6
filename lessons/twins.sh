#!/bin/sh
# twins.sh — does every lesson have a Chinese twin that shows what the English one shows?
#   sh lessons/twins.sh            (run by `make check-lessons`, after check.sh)
# For lessons/lessonN.md and lessons/glossary.md the twin is lessons/zh/<same name>.
# The twin must have, in the same order: the same headings (by level), the same tables
# (rows × columns), the same figures (the same files), the same code blocks, and every
# number the English page prints somewhere in its text. What a code block must keep
# depends on the word after its language, the same in both pages:
#   ```sh, ```python, ```c …  commands and code: the same lines once comments are taken
#                           out (# … in sh and python, /* … */ in c), which may be
#                           translated, keeping their numbers
#   ```text                 real console output: byte for byte
#   ```text labels          output whose lines start with a label ("the prompt:") that
#                           may be translated: the same lines after the label's colon
#   ```text diagram         a drawing (a legend, a circuit, a formula): translated freely,
#                           keeping its numbers
# Every figure the gallery captions in data/lessonN/figures.tsv needs a Chinese caption in
# figures.zh.tsv. A difference fails, naming the file and what is missing.
set -eu
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvscope-twins.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# skeleton FILE: one line per heading (H level), table (T rows cols), figure (F path)
# and code line (C text); numbers (N text) go to a second file, sorted and unique.
skeleton() {
    LC_ALL=C awk -v nums="$2" '
    function flush() { if (rows) print "T " rows " " cols; rows = 0 }
    function numbers(t) { while (match(t, /[0-9]+([.,][0-9]+)*/)) { print substr(t, RSTART, RLENGTH) > nums; t = substr(t, RSTART + RLENGTH) } }
    /^[ \t]*```/ {
        flush(); line = $0; sub(/^[ \t]*/, "", line); print "C " line
        if (!code) { code = 1; n = split(line, w, " "); lang = substr(w[1], 4); kind = w[2] } else code = 0
        next
    }
    code && kind == "diagram" { numbers($0); next }
    code && kind == "labels" { t = $0; if (match(t, /^[^:]*:|^[^:]*\357\274\232/)) { l = RLENGTH; numbers(substr(t, 1, l)); t = substr(t, l + 1) }
        sub(/^ +/, "", t); print "C " t; next }
    code && lang == "text" { print "C " $0; next }
    code {
        t = $0
        if (lang == "c") { while (match(t, /\/\*.*\*\//)) { b = RSTART; l = RLENGTH; numbers(substr(t, b, l)); t = substr(t, 1, b - 1) substr(t, b + l) } }
        else if (match(t, /(^|[ \t])#.*/)) { b = RSTART; numbers(substr(t, b)); t = substr(t, 1, b - 1) }
        sub(/[ \t]+$/, "", t)
        if (t != "") print "C " t
        next
    }
    /^\|/ { if (!rows) { n = split($0, a, "|"); cols = n - 2 } rows++; next }
    { flush() }
    /^#+ / { match($0, /^#+/); print "H " RLENGTH }
    {
        s = $0
        while (match(s, /!\[[^]]*\]\([^)]*\)/)) {
            f = substr(s, RSTART, RLENGTH); sub(/^!\[[^]]*\]\(/, "", f); sub(/\)$/, "", f)
            while (f ~ /^\.\.\//) f = substr(f, 4)
            print "F " f
            s = substr(s, RSTART + RLENGTH)
        }
    }
    { numbers($0) }
    END { flush() }' "$1" > "$2.skel"
    # tables: the numbers of table cells count too
    LC_ALL=C awk '/^[ \t]*```/ { code = !code; next } !code && /^\|/ { t = $0
        while (match(t, /[0-9]+([.,][0-9]+)*/)) { print substr(t, RSTART, RLENGTH); t = substr(t, RSTART + RLENGTH) } }' "$1" >> "$2"
    LC_ALL=C sort -u "$2" -o "$2"
}

status=0
fail() { echo "twins: $*" >&2; status=1; }
# compare EN ZH: fail for each way ZH lacks what EN shows
compare() {
    : > "$tmp/en"; : > "$tmp/zh"
    skeleton "$1" "$tmp/en"; skeleton "$2" "$tmp/zh"
    if ! diff "$tmp/en.skel" "$tmp/zh.skel" > "$tmp/diff"; then
        fail "$2 differs from $1 in its headings (H level), tables (T rows columns), figures (F file) or code blocks (C line); < English, > Chinese:"
        head -n 20 "$tmp/diff" >&2
    fi
    missing=$(LC_ALL=C comm -23 "$tmp/en" "$tmp/zh" | tr '\n' ' ')
    [ -z "$missing" ] || fail "$2 lacks numbers $1 prints: $missing"
}
# First show that the comparison catches a twin without a number, one with another
# figure, one with another command and one with a diagram that lost a number, and lets
# translated comments, labels and diagrams through: a check that cannot fail would pass
# every twin, one that fails on a translation would keep English in the Chinese lessons.
printf '# A\n\n## B\n\n| x | y |\n|---|---|\n| a | 2.5 |\n\n![f](../plots/a.png)\n\n```sh\nmake   # takes a minute\nmake lesson3\n```\n\n```text labels\nthe prompt:  And Jacob\nwindow 54:   up a\n```\n\n```text diagram\nlayer 7  reads j - 1\n```\n\nkey 0 gets 0.81.\n' > "$tmp/self.en"
printf '# 甲\n\n## 乙\n\n| x | y |\n|---|---|\n| a | 2.5 |\n\n![f](../../plots/b.png)\n\n```sh\nmake   # 大约一分钟\nmake lesson4\n```\n\n```text labels\n提示词：  And Jacob\n窗口 54： up a\n```\n\n```text diagram\n第 7 层  读取 j − 1 处\n```\n\n键 0 得到。\n' > "$tmp/self.zh"
compare "$tmp/self.en" "$tmp/self.zh" 2> "$tmp/self.out" || true
if [ $status -eq 0 ] || ! grep -q "F plots/a.png" "$tmp/self.out" || ! grep -q "lacks numbers.*0.81" "$tmp/self.out" \
    || ! grep -q "< C make lesson3" "$tmp/self.out" || grep -q "C make *#\|minute\|Jacob\|layer" "$tmp/self.out" \
    || grep -q "lacks numbers.* 54 \|lacks numbers.* 7 " "$tmp/self.out"; then
    cat "$tmp/self.out" >&2
    echo "twins: the check missed a planted missing number, figure or command, or failed a translated comment, label or diagram; it cannot be trusted" >&2
    exit 2
fi
# and a diagram that lost its number
printf '```text diagram\nlayer 7\n```\n' > "$tmp/self.en"; printf '```text diagram\n某层\n```\n' > "$tmp/self.zh"
status=0
compare "$tmp/self.en" "$tmp/self.zh" 2> "$tmp/self.out" || true
if [ $status -eq 0 ] || ! grep -q "lacks numbers.*7" "$tmp/self.out"; then
    echo "twins: the check missed a diagram that lost its number; it cannot be trusted" >&2
    exit 2
fi
status=0
for en in lessons/lesson*.md lessons/glossary.md; do
    [ -f "$en" ] || continue
    zh=lessons/zh/${en#lessons/}
    if [ ! -f "$zh" ]; then fail "$en has no Chinese twin $zh"; continue; fi
    compare "$en" "$zh"
done
for t in data/lesson*/figures.tsv; do
    [ -f "$t" ] || continue
    z=${t%.tsv}.zh.tsv
    cut -f1 "$t" | sort > "$tmp/f.en"
    if [ -f "$z" ]; then cut -f1 "$z" | sort > "$tmp/f.zh"; else : > "$tmp/f.zh"; fi
    missing=$(comm -23 "$tmp/f.en" "$tmp/f.zh" | tr '\n' ' ')
    [ -z "$missing" ] || fail "$z has no Chinese caption for: $missing"
done
if [ $status -ne 0 ]; then
    echo "twins: a Chinese lesson lacks what its English twin shows; edit lessons/zh/*.md.in (or the lesson script's Chinese text) and run: make lessons" >&2
    exit 1
fi
echo "twins: every lesson's Chinese twin has its headings, tables, figures, commands, console output and numbers, comments, labels and diagrams translated (the check caught a planted missing number, figure and command)"
