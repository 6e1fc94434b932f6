#!/bin/sh
# kill_loop.sh — kill -9 a long `kvscope run` at random moments, round after round, and
# check what a user would find:
#   - its --out is always absent or complete: byte for byte the files of the same run
#     left alone (the outputs are deterministic; timing.csv is not recorded);
#   - a temporary sibling (out.tmp.<pid>.*, out.old.<pid>.*) that a killed run left does
#     not survive the next run that gets as far as creating its own;
#   - after a last run that is not killed, out is complete and nothing is beside it.
# Then the same for `kvscope train` and its checkpoint, written at every step (with
# --force: a round after one that finished trains over its model folder):
#   - after any kill, the checkpoint is absent or a whole one (the next round resumes
#     from it with --resume, which refuses anything else; absent: it starts afresh);
#   - a temporary checkpoint (t.ckpt.tmp.<pid>.*) a kill left does not survive the next
#     run that gets as far as writing its own;
#   - a last run that is not killed ends with the model of one run left alone, byte for
#     byte, and neither the checkpoint nor a temporary one beside it.
#   sh tests/kill_loop.sh BIN [ROUNDS]      (run by .ci/run; about 60 s for 20 rounds)
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

# ---- train and its checkpoint ------------------------------------------------------
awk 'BEGIN { srand(7); split("the lord said unto moses and god saw light that it was good", w, " ");
             for (n = 0; n < 200000; n += length(s)) { s = w[int(rand() * 13) + 1] " "; printf "%s", s } }' \
    > "$W/corpus.txt"
TRAIN="train --corpus $W/corpus.txt --layers 1 --heads 2 --dim 16 --ctx 32 --batch 2 --steps 400
       --warmup 1 --checkpoint-every 1 --eval-every 0 --samples 8 --quiet --force"
ckstrays() { (cd "$W" && ls -A | grep -E '^t\.ckpt\.tmp\.[0-9]+\.' || true); }
same_model() { cmp -s "$W/tref/model.safetensors" "$1/model.safetensors" &&
               cmp -s "$W/tref/train_log.csv" "$1/train_log.csv"; }

t0=$(date +%s.%N)
# shellcheck disable=SC2086
"$BIN" $TRAIN --out "$W/tref"
t_ref=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
echo "kill_loop: a whole training run takes ${t_ref} s; $ROUNDS rounds of kill -9"

# what a kill in the middle of a save leaves (a save takes a millisecond, so the rounds
# rarely catch one): planted now and halfway, with the pid of a finished process
plant() { dead=$(sh -c 'echo $$'); printf 'KVSCKPT\002half' > "$W/t.ckpt.tmp.$dead.Kq3vZ$1"; }
plant 0
resumed=0 fresh=0 ckcleaned=0
i=1
while [ "$i" -le "$ROUNDS" ]; do
    [ "$i" -eq $((ROUNDS / 2 + 1)) ] && plant 1
    before=$(ckstrays)
    ino=$(stat -c %i "$W/t.ckpt" 2> /dev/null || echo none)
    resume=
    if [ -e "$W/t.ckpt" ]; then resume=--resume; resumed=$((resumed + 1)); else fresh=$((fresh + 1)); fi
    # shellcheck disable=SC2086
    "$BIN" $TRAIN --out "$W/t" $resume 2> "$W/err" &
    pid=$!
    sleep "$(awk -v s="$i" -v t="$t_ref" 'BEGIN { srand(s * 104729); printf "%.3f", rand() * 1.1 * t }')"
    kill -9 "$pid" 2> /dev/null || true
    st=0
    wait "$pid" 2> /dev/null || st=$?
    # a run that was not killed (it finished first) must have succeeded
    [ "$st" -eq 0 ] || [ "$st" -eq 137 ] || fail "train round $i: exit $st: $(cat "$W/err")"
    if [ -e "$W/t.ckpt" ]; then
        [ "$(head -c 7 "$W/t.ckpt")" = KVSCKPT ] || fail "train round $i: t.ckpt is not a checkpoint"
    fi
    if [ -e "$W/t" ] && [ ! -e "$W/t.ckpt" ] && [ "$st" -eq 0 ]; then
        same_model "$W/t" || fail "train round $i: the finished model differs from one whole run"
    fi
    # a run that saved a checkpoint (a new inode: renamed in) or finished got past its
    # start, where the temporary checkpoints of dead runs go
    now=$(stat -c %i "$W/t.ckpt" 2> /dev/null || echo none)
    if [ "$st" -eq 0 ] || { [ "$now" != none ] && [ "$now" != "$ino" ]; }; then
        for s in $before; do
            [ -e "$W/$s" ] && fail "train round $i: $s, left by an earlier kill, survived a run"
        done
        [ -n "$before" ] && ckcleaned=$((ckcleaned + 1))
    fi
    i=$((i + 1))
done
resume=
[ -e "$W/t.ckpt" ] && resume=--resume
# shellcheck disable=SC2086
"$BIN" $TRAIN --out "$W/t" $resume || fail "the last training run failed"
same_model "$W/t" || fail "the last training run's model differs from one whole run"
[ ! -e "$W/t.ckpt" ] || fail "the checkpoint is left after a whole run"
left=$(ckstrays)
[ -z "$left" ] || fail "left beside the checkpoint after a whole run: $left"
echo "kill_loop: OK: train resumed $resumed times, started afresh $fresh times; stray temporary" \
     "checkpoints removed by the next run $ckcleaned times; the last run's model is one run's"
