#!/bin/sh
# examples.sh — the programs of examples/ do what they say (part of `make check`):
#   sh tests/examples.sh DIR BIN     DIR holds the built examples, BIN is bin/kvscope
# decode: loads data/model, prefills a prompt and decodes with the cache; its text must
# be the continuation `kvscope run` writes to tokens.csv for the same prompt and steps.
# It must also need no library but libc and libm (ldd lists what it links).
set -eu
dir=$1
bin=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvscope-examples.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prompt="And God said"
steps=40
"$dir/decode" data/model "$prompt" $steps > "$tmp/decode.txt"
"$bin" run --model data/model --prompt "$prompt" --steps $steps --record tokens --out "$tmp/run" --quiet
{ printf '%s' "$prompt"
  LC_ALL=C awk -F, 'NR > 1 && $1 > 0 { printf "%c", $3 + 0 }' "$tmp/run/tokens.csv"
  echo; } > "$tmp/want.txt"
if ! cmp -s "$tmp/decode.txt" "$tmp/want.txt"; then
    echo "examples: decode wrote \"$(cat "$tmp/decode.txt")\"; kvscope run continues \"$(cat "$tmp/want.txt")\"" >&2
    exit 1
fi
if command -v ldd > /dev/null 2>&1; then
    extra=$(ldd "$dir/decode" | awk '{ print $1 }' | grep -v -E '^(linux-vdso|/lib.*ld-linux|libc\.|libm\.|libgomp\.|libasan\.|libubsan\.|libstdc\+\+\.|libgcc_s\.)' || true)
    if [ -n "$extra" ]; then
        echo "examples: decode links more than the engine, libc and libm: $extra" >&2
        exit 1
    fi
fi
echo "examples: decode wrote kvscope run's $steps tokens: $(cat "$tmp/decode.txt")"
