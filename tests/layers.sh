#!/bin/sh
# layers.sh — who may include whom in src/ (what `make check-layers` runs, part of
# `make check`). Every file includes headers by bare name ("model.h"), header names are
# unique across src/, and a header's folder is its layer. A file may include headers of
# its own folder and of the folders its line below lists; anything else fails, naming
# file:line, the header, its folder and the rule. src/README.md shows the same table.
#   sh tests/layers.sh          check src/
#   sh tests/layers.sh DIR      check another tree laid out the same way (the self-test)
# The check proves itself first: on a scratch copy of src/ with one engine file that
# includes a figure header and one figure file that includes a training header, it must
# name both, or it cannot tell.
set -eu

# folder: the folders it may include besides itself (lowest layer first)
RULES='util:
engine: util
modelio: engine util
observe: modelio engine util
train: modelio engine util
serve: observe modelio engine util
experiments: serve observe modelio engine util
cli: experiments serve train observe modelio engine util'

# Print "file:line: rule" for every include that breaks a rule, and for every folder,
# duplicate header name or included header that the table does not know.
scan() {
    root=$1
    ls "$root"/*/*.h | awk -v rules="$RULES" '
    BEGIN {
        n = split(rules, lines, "\n")
        for (i = 1; i <= n; i++) {
            split(lines[i], kv, ":"); known[kv[1]] = 1; allow[kv[1] " " kv[1]] = 1
            rule[kv[1]] = kv[1] "/"
            m = split(kv[2], lower, " ")
            for (j = 1; j <= m; j++) { allow[kv[1] " " lower[j]] = 1; rule[kv[1]] = rule[kv[1]] ", " lower[j] "/" }
        }
    }
    # first the headers (one path a line on stdin), then the files to scan
    FILENAME == "-" {
        k = split($0, p, "/"); name = p[k]; dir = p[k - 1]
        if (!(dir in known)) { print $0 ": folder " dir " is not in the layer table (tests/layers.sh)"; bad = 1 }
        if (name in folder) { print $0 ": header name " name " is also in " folder[name] "/ (names are unique across src/)"; bad = 1 }
        folder[name] = dir; next
    }
    FNR == 1 { k = split(FILENAME, p, "/"); me = p[k - 1] }
    /^[ \t]*#[ \t]*include[ \t]*"/ {
        h = $0; sub(/^[^"]*"/, "", h); sub(/".*/, "", h)
        if (h ~ /\//) { print FILENAME ":" FNR ": includes \"" h "\": include a header by its bare name (the Makefile adds -I per folder)"; bad = 1; next }
        if (h in folder) {
            to = folder[h]
            if (!((me " " to) in allow)) {
                print FILENAME ":" FNR ": " me "/ includes " h " (" to "/): " me "/ may include only " rule[me]; bad = 1
            }
        } else { print FILENAME ":" FNR ": includes \"" h "\", which is no header in src/"; bad = 1 }
    }
    END { exit bad ? 1 : 0 }' - "$root"/*/*.c "$root"/*/*.h
}

# 1. The check catches what it should, and passes the tree as it is meant to be.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvscope-layers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cp -R src "$tmp/src"
rm -rf "$tmp/src/observe/explorer"
printf '#include "attn_observer.h"\n' >> "$tmp/src/engine/ops.c"
printf '#include "train.h"\n' >> "$tmp/src/observe/figure.c"
found=$(scan "$tmp/src" || true)
for want in "src/engine/ops.c:.*engine/ includes attn_observer.h (observe/)" \
            "src/observe/figure.c:.*observe/ includes train.h (train/)"; do
    if ! echo "$found" | grep -q "$want"; then
        echo "check-layers: the check misses a planted include ($want)" >&2
        exit 1
    fi
done

# 2. src/ itself: enough files to be the whole library and the program.
count=$(ls src/*/*.c src/*/*.h | wc -l | tr -d ' ')
if [ "$count" -lt 100 ] || [ ! -f src/engine/model.c ]; then
    echo "check-layers: only $count files in src/*/, or no src/engine/model.c (run from the repository root)" >&2
    exit 1
fi
if ! scan src >&2; then
    echo "check-layers: an include crosses the layers; see the table in tests/layers.sh (and src/README.md)" >&2
    exit 1
fi
echo "check-layers: $count files in $(ls -d src/*/ | wc -l | tr -d ' ') folders, every include follows the layers (the check caught both planted includes)"
