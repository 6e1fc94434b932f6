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
#   lesson_end N         render lessons/lessonN.md
#   kv FILE KEY VALUE    append "KEY,VALUE" to FILE (created with a header when missing)
#   csv_md FILE [COLS]   print a CSV as a markdown table (COLS: "1,3,4", default all)
#   chart SCRIPT OUT ARGS...   run plots/SCRIPT.gp writing OUT.png and OUT.svg
#   figure FILE CAPTION  list plots/lessonN/FILE (a .png) with its caption for the
#                        gallery (data/lessonN/figures.tsv), if it was made
set -eu
# One thread unless the caller asks for more: the lessons' steps are small (a decode step
# is a few matrix-vector products), where threads cost more than they save, and the
# outputs do not depend on it.
: "${OMP_NUM_THREADS:=1}"
export OMP_NUM_THREADS

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
    sh lessons/render.sh "lessons/lesson$1.md.in" "lessons/lesson$1.md"
    echo "lesson$1: wrote data/lesson$1/ plots/lesson$1/ lessons/lesson$1.md"
}

kv() {
    [ -f "$1" ] || echo "key,value" > "$1"
    printf '%s,%s\n' "$2" "$3" >> "$1"
}

csv_md() {
    awk -F, -v cols="${2:-}" '
    NR == 1 { if (cols == "") for (i = 1; i <= NF; i++) c[++n] = i
              else n = split(cols, c, ",") }
    { s = "|"; for (i = 1; i <= n; i++) s = s " " $(c[i]) " |"; print s
      if (NR == 1) { s = "|"; for (i = 1; i <= n; i++) s = s "---|"; print s } }' "$1"
}

# awk functions for tables a learner reads; use as: awk "$AWKLIB"' ... '
#   c3(n)       integer with thousands separators: 212705280 -> 212,705,280
#   kib(b)      bytes in KiB/MiB/GiB (binary), 3 significant digits
AWKLIB='
function c3(s,    neg, n, i, o) {
    s = sprintf("%.0f", s); neg = ""; if (s ~ /^-/) { neg = "-"; s = substr(s, 2) }
    n = length(s); o = ""
    for (i = 1; i <= n; i++) { o = o substr(s, i, 1); if ((n - i) % 3 == 0 && i < n) o = o "," }
    return neg o
}
function kib(b,    u, i) {
    split("bytes KiB MiB GiB TiB", u, " "); i = 1
    while (b >= 1024 && i < 5) { b /= 1024; i++ }
    if (i == 1) return b " bytes"
    return (b >= 100 ? sprintf("%.0f", b) : b >= 10 ? sprintf("%.1f", b) : sprintf("%.2f", b)) " " u[i]
}
'

figure() {
    if [ -f "$P/$1" ]; then printf '%s\t%s\n' "$1" "$2" >> "$D/figures.tsv"; fi
}

chart() {
    script=$1; out=$2; shift 2
    if ! command -v gnuplot > /dev/null 2>&1; then
        echo "lessons: gnuplot is missing (apt-get install gnuplot-nox); skipping $out" >&2
        return 0
    fi
    gnuplot -e "out='$out'" "$@" "plots/$script.gp"
}
