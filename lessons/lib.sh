# lib.sh — helpers shared by lessons/lessonN.sh (sourced, POSIX sh).
#
# A lesson script is run from the repository root as
#     sh lessons/lessonN.sh BIN
# and rebuilds exactly data/lessonN/ and plots/lessonN/, then renders
# lessons/lessonN.md from lessons/lessonN.md.in. Everything it writes is a pure
# function of the code (no time, no RSS), so a second run gives the same bytes.
#
#   lesson_begin N BIN [ARGS]  check BIN, empty data/lessonN and plots/lessonN; sets KV, D,
#                        P and MODEL_ARGS (ARGS, passed to every kvscope run and verify)
#   lesson_end N         write the numbers marked for people (kvscope format) in
#                        data/lessonN's files, then render lessons/lessonN.md and its
#                        Chinese twin lessons/zh/lessonN.md (from lessons/zh/lessonN.md.in:
#                        the same generated files, a second rendering)
#   kv FILE KEY VALUE    append "KEY,VALUE" to FILE (created with a header when missing)
#   value FILE KEY       print KEY's value in a key,value FILE (fails if it has none)
#   chart SCRIPT OUT ARGS...   run plots/SCRIPT.gp writing OUT.png and OUT.svg
#   figure FILE CAPTION [ZH]  list plots/lessonN/FILE (a .png) with its caption for the
#                        gallery (data/lessonN/figures.tsv) and its Chinese caption ZH
#                        (data/lessonN/figures.zh.tsv), if it was made
#   pick_heads DIR       run kvscope heads into DIR and set the heads a lesson shows:
#                        IND_L IND_H IND_SCORE (the highest induction score) and
#                        PREV_L PREV_H PREV_SCORE (the highest previous-token score)
#   head_name L H        the figure suffix kvscope gives layer L, head H: L3_H04
#   generated DIR        the bytes a run generated (its DIR/tokens.csv, decode steps)
#   copied TEXT WANT     how many bytes TEXT reproduces of WANT from its start
#   model_words          one sentence: which model MODEL_ARGS names
#   model_words_zh       the same sentence in Chinese, its links relative to lessons/zh/
#   label_zh TEXT WIDTH  TEXT padded to WIDTH terminal columns, a Chinese character (three
#                        UTF-8 bytes) taking two: the labels of a Chinese output block
#   claim WHAT COND      stop the lesson (exit 1, naming WHAT) unless the awk condition
#                        COND holds: every sentence the prose says of the numbers (which
#                        head, copies or not, sinks help or not) is a claim, so that
#                        make lessons and make check-lessons fail when it stops holding
#
# The attention lessons share one prompt, REPEAT_PROMPT: a verse-like sentence (PHRASE),
# then its first words again (PHRASE_START), so that the bytes that come next are a copy
# of the earlier ones (COPY_WANT) — what an induction head predicts, if the cache still
# holds the first copy.
#
# Arithmetic in C, orchestration in shell: the numbers a lesson shows come from kvscope —
# what it counted and recorded (run, compare, batch, budget, kvmem: CSV files and
# values.csv), and its closed forms (kvscope info: widths, parameters, bytes, shares).
# The scripts run the commands, read columns by their header's names (AWKLIB's col) and
# lay the tables out; a number written for people is marked (digits, bytes, kib) and
# kvscope writes it (kvscope format), the one way kvscope writes every number.
set -eu
# One thread unless the caller asks for more: the lessons' steps are small (a decode step
# is a few matrix-vector products), where threads cost more than they save, and the
# outputs do not depend on it.
: "${OMP_NUM_THREADS:=1}"
export OMP_NUM_THREADS

PHRASE="And Jacob set up a pillar of stone in Bethel."
PHRASE_START="And Jacob set"
REPEAT_PROMPT="$PHRASE $PHRASE_START"
COPY_WANT=${PHRASE#"$PHRASE_START"}

lesson_begin() {
    N=$1
    KV=$2
    shift 2
    # Extra arguments go to every kvscope run/verify: `make lessons MODEL=DIR` passes
    # "--model DIR" (a Hugging Face GPT-2 folder instead of the built-in model).
    MODEL_ARGS="$*"
    if [ ! -x "$KV" ]; then
        echo "lesson$N: no kvscope binary at $KV (run make first)" >&2
        exit 2
    fi
    D=data/lesson$N
    P=plots/lesson$N
    rm -rf "$D" "$P"
    mkdir -p "$D" "$P"
    # A failed run must not leave a half-made lesson behind.
    trap 'st=$?; if [ $st -ne 0 ]; then rm -rf "$D" "$P"; echo "lesson$N: failed" >&2; fi' EXIT
}

lesson_end() {
    files=$(ls "data/lesson$1"/*.md "data/lesson$1"/*.csv 2> /dev/null || true)
    [ -z "$files" ] || "$KV" format $files
    sh lessons/render.sh "lessons/lesson$1.md.in" "lessons/lesson$1.md"
    if [ -f "lessons/zh/lesson$1.md.in" ]; then
        sh lessons/render.sh "lessons/zh/lesson$1.md.in" "lessons/zh/lesson$1.md"
        echo "lesson$1: wrote data/lesson$1/ plots/lesson$1/ lessons/lesson$1.md lessons/zh/lesson$1.md"
    else
        echo "lesson$1: wrote data/lesson$1/ plots/lesson$1/ lessons/lesson$1.md"
    fi
}

kv() {
    [ -f "$1" ] || echo "key,value" > "$1"
    printf '%s,%s\n' "$2" "$3" >> "$1"
}

value() {
    awk -F, -v k="$2" '$1 == k { v = substr($0, length(k) + 2); found = 1 }
        END { if (!found) { printf "lessons: no key %s in %s\n", k, FILENAME > "/dev/stderr"; exit 1 }
              print v }' "$1"
}

# awk functions for the scripts; use as: awk -F, "$AWKLIB"' ... '
#   header()    at a file's first line (FNR == 1): learn its columns by name
#   col(name)   this line's field in the column called name (unknown: the script stops)
#   digits(n), bytes(n), kib(n)   n marked for kvscope format: 212,705,280 / 72.0 KiB / 6
#   bytelabel(c)  byte c as a markdown table shows it: ␣ for a space, ¶ for a newline, a
#               printable ASCII byte as itself, any other byte as ⟨c⟩ (⟨200⟩): a lone
#               byte >= 0x80 is not UTF-8, and a lesson file must be
#   toklabel(c, text)  the same for a token of tokens.csv (its token_id and text): the start
#               token as ⟨s⟩, the name kvscope and the glossary give it
AWKLIB='
function header(   i) { for (i = 1; i <= NF; i++) COL[FILENAME, $i] = i }
function col(name) {
    if (!((FILENAME, name) in COL)) {
        printf "lessons: no column %s in %s\n", name, FILENAME > "/dev/stderr"; exit 2
    }
    return $(COL[FILENAME, name])
}
function digits(n) { return "{{digits " sprintf("%.0f", n) "}}" }
function bytes(n) { return "{{bytes " sprintf("%.0f", n) "}}" }
function kib(n) { return "{{kib " sprintf("%.0f", n) "}}" }
function bytelabel(c) {
    c += 0
    if (c == 32) return "␣"
    if (c == 10) return "¶"
    if (c > 32 && c < 127) return sprintf("%c", c)
    return "⟨" c "⟩"
}
function toklabel(c, text) { return text == "⟨s⟩" ? text : bytelabel(c) }
'

figure() {
    [ -f "$P/$1" ] || return 0
    printf '%s\t%s\n' "$1" "$2" >> "$D/figures.tsv"
    if [ $# -ge 3 ]; then printf '%s\t%s\n' "$1" "$3" >> "$D/figures.zh.tsv"; fi
}

chart() {
    script=$1; out=$2; shift 2
    if ! command -v gnuplot > /dev/null 2>&1; then
        echo "lessons: gnuplot is missing (apt-get install gnuplot-nox); skipping $out" >&2
        return 0
    fi
    gnuplot -e "out='$out'" "$@" "plots/$script.gp"
}

pick_heads() {
    "$KV" heads $MODEL_ARGS --out "$1" --quiet
    set -- $(awk -F, "$AWKLIB"'FNR == 1 { header(); next }
        { i = col("induction") + 0; p = col("prev_token") + 0
          if (!bi || i > bi) { bi = i; il = col("layer"); ih = col("head") }
          if (!bp || p > bp) { bp = p; pl = col("layer"); ph = col("head") } }
        END { printf "%d %d %.2f %d %d %.2f\n", il, ih, bi, pl, ph, bp }' "$1/heads.csv")
    IND_L=$1 IND_H=$2 IND_SCORE=$3 PREV_L=$4 PREV_H=$5 PREV_SCORE=$6
}

claim() {
    if ! awk "BEGIN { exit !($2) }" < /dev/null; then
        echo "lesson$N: the text says \"$1\", which no longer holds ($2)" >&2
        exit 1
    fi
}

head_name() { printf 'L%d_H%02d' "$1" "$2"; }
# What a figure's title calls the head with the best induction score (layer $1, score $2):
# an induction head only when it is one (past layer 0, at least 0.5 at every length).
ind_title() { awk -v l="$1" -v s="$2" 'BEGIN { print (l >= 1 && s >= 0.5) ? "induction head" : "best induction head" }'; }

generated() {
    LC_ALL=C awk -F, "$AWKLIB"'FNR == 1 { header(); next } col("step") > 0 { id = col("token_id") + 0; if (id == 10) printf "¶"; else printf "%c", id }' "$1/tokens.csv"
}

copied() {
    LC_ALL=C awk -v a="$1" -v b="$2" 'BEGIN { n = 0; while (n < length(a) && n < length(b) && substr(a, n + 1, 1) == substr(b, n + 1, 1)) n++; print n }'
}

model_words() {
    case "$MODEL_ARGS" in
    "") echo "the built-in model (random weights with GPT-2 small's widths)" ;;
    "--model data/model") echo "kvscope's trained model (\`data/model/\`: a small byte-level GPT-2 trained on the King James Bible, see the [README](../README.md#train-a-small-gpt-2-kvscope-train-kvscope-heads))" ;;
    *) echo "the weights given with \`$MODEL_ARGS\`" ;;
    esac
}

label_zh() {
    b=$(printf '%s' "$1" | wc -c); a=$(printf '%s' "$1" | LC_ALL=C tr -d '\200-\377' | wc -c)
    pad=$(( $2 - a - 2 * (b - a) / 3 )); [ "$pad" -ge 1 ] || pad=1
    printf '%s%*s' "$1" "$pad" ''
}

model_words_zh() {
    case "$MODEL_ARGS" in
    "") echo "内置模型（built-in model，随机权重，宽度与 GPT-2 small 相同）" ;;
    "--model data/model") echo "kvscope 训练好的模型（trained model，即 \`data/model/\`，一个在英王钦定本《圣经》上训练的小型字节级 GPT-2，见 [README](../../README.md#train-a-small-gpt-2-kvscope-train-kvscope-heads)）" ;;
    *) echo "\`$MODEL_ARGS\` 指定的权重" ;;
    esac
}
