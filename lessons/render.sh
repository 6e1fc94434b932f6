#!/bin/sh
# render.sh — fill a lesson template with numbers and tables the tool generated.
#
#   sh lessons/render.sh lessons/lesson2.md.in lessons/lesson2.md
#
# Template directives (paths relative to the repository root):
#   {{include PATH}}      the whole file (a generated markdown table, a code listing);
#                         on an indented line, every included line gets that indentation
#   {{value PATH KEY}}    the value of KEY in PATH, a CSV file with header "key,value"
#   {{optional PATH}}     the whole file if it exists, else nothing: a section that only a
#                         measurement writes (data/measured/, `make timing`)
# A missing file or key stops the render with an error naming it, so a lesson can
# never show a number the tool did not produce. The output is written atomically.
set -eu
in=$1
out=$2
tmp="$out.tmp.$$"
trap 'rm -f "$tmp"' EXIT
awk '
function fail(msg) { printf "render: %s:%d: %s\n", FILENAME, FNR, msg > "/dev/stderr"; err = 1; exit 1 }
function value(path, key,    line, n, f, found) {
    found = 0
    while ((getline line < path) > 0) {
        n = index(line, ",")
        if (n > 0 && substr(line, 1, n - 1) == key) { found = 1; f = substr(line, n + 1) }
    }
    if (close(path) < 0) fail("cannot read " path)
    if (!found) fail("no key \"" key "\" in " path)
    return f
}
function include(path, indent,    line, s, ok) {
    s = ""; ok = 0
    # lines after the first take the indentation of the directive, so a list item stays one
    while ((getline line < path) > 0) { s = s (ok ? indent : "") line "\n"; ok = 1 }
    close(path)
    if (!ok) fail("cannot read " path " (or it is empty)")
    sub(/\n$/, "", s)
    return s
}
{
    line = $0; res = ""
    while (match(line, /\{\{[a-z]+ [^}]*\}\}/)) {
        d = substr(line, RSTART + 2, RLENGTH - 4)
        pre = substr(line, 1, RSTART - 1)
        indent = (res == "" && pre ~ /^[ \t]*$/) ? pre : ""
        res = res pre
        line = substr(line, RSTART + RLENGTH)
        n = split(d, a, " ")
        if (a[1] == "include" && n == 2) res = res include(a[2], indent)
        else if (a[1] == "value" && n == 3) res = res value(a[2], a[3])
        else if (a[1] == "optional" && n == 2) res = res ((getline probe < a[2]) > 0 ? (close(a[2]) < 0 ? "" : include(a[2], indent)) : "")
        else fail("unknown directive {{" d "}}")
    }
    print res line
}
END { if (err) exit 1 }
' "$in" > "$tmp"
mv "$tmp" "$out"
trap - EXIT
