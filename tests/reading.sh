#!/bin/sh
# reading.sh — src/engine/README.md's "Read the engine" is the decode step that runs (what
# `make check-reading` runs, part of `make check`): its numbered list names every function
# one plain decode step enters, each once, in the order each is first entered — no more,
# no fewer, no other order — as traced by tests/trace_step.c on the engine built with
# -finstrument-functions. The list cannot drift from the code: a function added to the
# step, renamed, moved to another file or no longer called fails the check, which prints
# the list as traced.
#   sh tests/reading.sh build/release/trace/trace_step
# The list is the section's lines "N. `src/DIR/FILE:function`". The check proves itself
# first: a list missing one traced function, or two of them swapped, must fail.
set -eu
trace=$1
readme=src/engine/README.md

# "file:function" per numbered line of the section "## Read the engine" of file $1.
list() {
    awk '/^## Read the engine/ { on = 1; next } on && /^## / { on = 0 }
         on && /^[0-9]+\. `src\/[^`:]*:[A-Za-z_0-9]*`/ {
             s = $0; sub(/^[0-9]+\. `/, "", s); sub(/`.*/, "", s); print s }' "$1"
}

# Lines of code of function $2 in file $1: from the line at column 0 that names it with
# "(" to the first "}" at column 0, without blank and comment-only lines.
loc() {
    awk -v fn="$2" '
    !on && $0 ~ ("^[A-Za-z].*[^A-Za-z0-9_]" fn "\\(") && $0 !~ /;[ \t]*$/ { on = 1; n = 0 }
    on {
        line = $0; code = ""
        while (line != "") {
            if (inc) { i = index(line, "*/"); if (!i) { line = ""; break } line = substr(line, i + 2); inc = 0; continue }
            i = index(line, "/*"); j = index(line, "//")
            if (j && (!i || j < i)) { code = code substr(line, 1, j - 1); line = ""; break }
            if (!i) { code = code line; line = ""; break }
            code = code substr(line, 1, i - 1); line = substr(line, i + 2); inc = 1
        }
        if (code ~ /[^ \t]/) n++
        if ($0 ~ /^}/) { print n; exit }
    }' "$1"
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvscope-reading.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The trace: the addresses in the order first entered, named "file:function" by the
# binary's symbols with their source lines (nm -l), paths from the repository's root.
"$trace" > "$tmp/addrs"
nm -l --defined-only "$trace" | awk -v root="$(pwd)/" '
    NF >= 4 && ($2 == "t" || $2 == "T") {
        a = $1; sub(/^0+/, "", a); f = $4; sub(/:[0-9]+$/, "", f)
        if (index(f, root) == 1) f = substr(f, length(root) + 1)
        print a, f ":" $3 }' > "$tmp/names"
awk 'NR == FNR { name[$1] = $2; next }
     { a = tolower($1); sub(/^0x/, "", a); sub(/^0+/, "", a)
       if (!(a in name)) { printf "check-reading: no symbol at %s\n", $1 > "/dev/stderr"; exit 1 }
       print name[a] }' "$tmp/names" "$tmp/addrs" > "$tmp/traced"
n=$(wc -l < "$tmp/traced" | tr -d ' ')
grep -q '^src/engine/model.c:model_forward$' "$tmp/traced" || {
    echo "check-reading: the trace of a decode step does not enter model_forward" >&2; exit 1; }

# A list equals the trace, or the difference is printed. $1: the file holding the list.
same() {
    list "$1" > "$tmp/listed"
    cmp -s "$tmp/listed" "$tmp/traced"
}

# 1. The check fails on a list that lacks a traced function, and on one out of order.
awk '{ printf "%d. `%s`\n", NR, $0 }' "$tmp/traced" > "$tmp/body"
{ echo '## Read the engine'; sed '$d' "$tmp/body"; echo '## Next'; } > "$tmp/short.md"
{ echo '## Read the engine'; sed -n 2p "$tmp/body"; sed -n 1p "$tmp/body"; sed '1,2d' "$tmp/body"; echo '## Next'; } > "$tmp/swapped.md"
if same "$tmp/short.md" || same "$tmp/swapped.md"; then
    echo "check-reading: the check passes a list that differs from the trace" >&2
    exit 1
fi

# 2. src/engine/README.md's list.
if ! same "$readme"; then
    echo "check-reading: $readme's \"Read the engine\" is not the decode step that runs:" >&2
    diff "$tmp/listed" "$tmp/traced" | sed -n 's/^</  listed only:/p; s/^>/  traced only:/p' >&2 || true
    echo "check-reading: the step runs, in this order (the list to write):" >&2
    awk '{ printf "  %d. `%s`\n", NR, $0 }' "$tmp/traced" >&2
    exit 1
fi
total=0
while IFS=: read -r f fn; do
    total=$((total + $(loc "$f" "$fn")))
done < "$tmp/traced"
echo "check-reading: $readme's $n functions are the plain decode step as traced, in order ($total lines of code)"
