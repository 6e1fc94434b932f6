#!/bin/sh
# kill_loop.sh — kill -9 a long `kvscope run` at random moments, round after round, and
# check what a user would find:
#   - its --out is always absent or complete: byte for byte the files of the same run
#     left alone (the outputs are deterministic; timing.csv is not recorded);
#   - a temporary sibling (out.tmp.<pid>.*, out.old.<pid>.*) that a killed run left does
#     not survive the next run that gets as far as creating its own;
#   - after a last run that is not killed, out is complete and nothing is beside it.
#   sh tests/kill_loop.sh BIN [ROUNDS]      (run by .ci/run; about 40 s for 20 rounds)
set -eu
BIN=$1
ROUNDS=${2:-20}
[ -x "$BIN" ] || { echo "kill_loop: no kvscope binary at $BIN" >&2; exit 2; }
W=$(mktemp -d "${TMPDIR:-/tmp}/kvscope-kill.XXXXXX")
trap 'rm -rf "$W"' EXIT
RUN="run --steps 80 --heatmaps --raw --record shapes,attention,kv,flops,tokens --quiet"

fail() { echo "kill_loop: $*" >&2; exit 1; }
strays() { (cd "$W" && ls -A | grep -E '^out\.(tmp|old)\.[0-9]+\.' || true); }

t0=$(date +%s.%N)
# shellcheck disable=SC2086
"$BIN" $RUN --out "$W/ref"
t_ref=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
echo "kill_loop: a whole run takes ${t_ref} s; $ROUNDS rounds of kill -9 at random moments"

complete=0 absent=0 cleaned=0
i=1
while [ "$i" -le "$ROUNDS" ]; do
    before=$(strays)
    # shellcheck disable=SC2086
    "$BIN" $RUN --out "$W/out" &
    pid=$!
    # a moment in [0, 1.1 × the run's time): a few rounds finish before the kill
    sleep "$(awk -v s="$i" -v t="$t_ref" 'BEGIN { srand(s * 7919); printf "%.3f", rand() * 1.1 * t }')"
    kill -9 "$pid" 2> /dev/null || true
    wait "$pid" 2> /dev/null || true
    if [ -e "$W/out" ]; then
        diff -r "$W/ref" "$W/out" > "$W/diff" 2>&1 ||
            fail "round $i: out is there but not complete: $(head -3 "$W/diff")"
        complete=$((complete + 1))
    else
        absent=$((absent + 1))
    fi
    # this run made its own temporary folder only after removing the ones before it
    if strays | grep -q "\.$pid\."; then
        for s in $before; do
            [ -e "$W/$s" ] && fail "round $i: $s, left by an earlier kill, survived a run"
        done
        [ -n "$before" ] && cleaned=$((cleaned + 1))
    fi
    i=$((i + 1))
done
# shellcheck disable=SC2086
"$BIN" $RUN --out "$W/out"
diff -r "$W/ref" "$W/out" > /dev/null || fail "the last run's out differs from the reference"
left=$(strays)
[ -z "$left" ] || fail "left beside out after a whole run: $left"
echo "kill_loop: OK: out complete after $complete kills, absent after $absent; stray folders" \
     "removed by the next run $cleaned times; nothing left after a whole run"
