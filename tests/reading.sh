#!/bin/sh
# reading.sh — src/engine/README.md's "Read the engine" list is true (what `make check-reading` runs, part
# of `make check`): every function it names is defined in the file it names, and together
# they stay short enough to read in one sitting.
#   sh tests/reading.sh
# The list is src/engine/README.md's numbered lines "N. `src/DIR/FILE.c:function`". A function runs from
# the line at column 0 that names it with "(" to the first "}" at column 0; its lines of
# code are those lines that hold anything besides blanks and comments. The check proves
# itself first: a list naming a function that is not there must fail.
set -eu
LIMIT=250

# "file:function" per line of the README section given as $1.
list() {
    awk '/^## Read the engine/ { on = 1; next } on && /^## / { on = 0 }
         on && /^[0-9]+\. `src\/[^`:]*:[A-Za-z_0-9]*`/ {
             s = $0; sub(/^[0-9]+\. `/, "", s); sub(/`.*/, "", s); print s }' "$1"
}

# Lines of code of function $2 in file $1; nothing printed if it is not defined there.
loc() {
    awk -v fn="$2" '
    !on && $0 ~ ("^[A-Za-z].*[^A-Za-z0-9_]" fn "\\(") && $0 !~ /;[ \t]*$/ { on = 1; n = 0 }
    on {
        line = $0; code = ""
        while (line != "") {                       # drop comments, keep what is left
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

# Print "file:function lines" per entry and the total; fail naming what is missing.
count() {
    total=0; bad=0
    for e in $(list "$1"); do
        f=${e%%:*}; fn=${e#*:}
        n=$( [ -f "$f" ] && loc "$f" "$fn" || true)
        if [ -z "$n" ]; then
            echo "check-reading: $1 lists $f:$fn, but $f defines no function $fn" >&2; bad=1; continue
        fi
        printf '  %-44s %3d\n' "$e" "$n"
        total=$((total + n))
    done
    [ $bad -eq 0 ] || return 1
    echo "  total $total lines of code"
    [ "$total" -le $LIMIT ] || { echo "check-reading: $total lines of code, more than $LIMIT" >&2; return 1; }
}

# 1. The check fails on a list naming a function that is not there.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvscope-reading.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
printf '## Read the engine\n1. `src/engine/ops.c:attention_forward`\n2. `src/engine/ops.c:no_such_function`\n## Next\n' > "$tmp/README.md"
if count "$tmp/README.md" > /dev/null 2>&1; then
    echo "check-reading: the check passes a list that names a missing function" >&2
    exit 1
fi

# 2. README's list.
entries=$(list src/engine/README.md | wc -l | tr -d ' ')
if [ "$entries" -lt 5 ]; then
    echo "check-reading: src/engine/README.md's \"Read the engine\" lists $entries functions; expected the decode step" >&2
    exit 1
fi
count src/engine/README.md
echo "check-reading: src/engine/README.md's $entries functions exist, at most $LIMIT lines of code together"
