#!/bin/sh
# check.sh — do the committed lessons still match what the code generates?
#   sh lessons/check.sh BIN BUILD_DIR      (what `make check-lessons` runs)
# Copies the repository (without build/, bin/, .git/) to a scratch folder, runs
# `make lessons` there with the same binary, and compares every generated file with the
# one in the repository: data/lesson*/, plots/lesson*/, lessons/lesson*.md, their
# Chinese twins lessons/zh/lesson*.md, and the galleries plots/README.md and README.zh.md. Any difference, missing or extra file fails, naming the file and the
# command that brings it up to date. The repository itself is not touched.
set -eu
BIN=$1
B=$2
case $BIN in /*) ;; *) BIN=$(pwd)/$BIN ;; esac
case $B in /*) ;; *) B=$(pwd)/$B ;; esac
[ -x "$BIN" ] || { echo "check-lessons: no kvscope binary at $BIN (run make first)" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvscope-lessons.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
tar --exclude=./build --exclude=./bin --exclude=./.git --exclude='*.tmp.*' -cf - . | tar -xf - -C "$tmp"
# -o: the binary is up to date as it is; do not rebuild it inside the copy.
if ! make -C "$tmp" --no-print-directory -o "$BIN" BIN="$BIN" B="$B" lessons > "$tmp.log" 2>&1; then
    cat "$tmp.log" >&2; rm -f "$tmp.log"
    echo "check-lessons: make lessons failed in a fresh copy" >&2
    exit 1
fi
rm -f "$tmp.log"
status=0
seen=""
for d in data/lesson* plots/lesson* "$tmp"/data/lesson* "$tmp"/plots/lesson*; do
    [ -d "$d" ] || continue
    rel=${d#"$tmp"/}
    case " $seen " in *" $rel "*) continue ;; esac
    seen="$seen $rel"
    if ! diff -rq "$rel" "$tmp/$rel" > "$tmp/diff" 2>&1; then
        sed "s|$tmp/||g" "$tmp/diff" >&2
        status=1
    fi
done
for f in $({ (cd "$tmp" && ls lessons/lesson*.md lessons/zh/lesson*.md plots/README*.md); ls lessons/lesson*.md lessons/zh/lesson*.md plots/README*.md; } 2>/dev/null | sort -u); do
    if ! cmp -s "$f" "$tmp/$f"; then
        echo "Files $f and (regenerated) $f differ" >&2
        status=1
    fi
done
if [ $status -ne 0 ]; then
    echo "check-lessons: the committed lessons differ from what the code generates; run: make lessons" >&2
    exit 1
fi
echo "check-lessons: every lesson, table and figure matches what the code generates"
