#!/bin/sh
# slides.sh OUT — the lecture deck: OUT (a PDF of 16:9 pages, 1280×720 units) and its speaker
# notes, OUT without .pdf + .notes.md (one section per page). What `make slides` runs:
#   sh plots/slides.sh plots/slides.pdf
# The deck has a lecture's shape: a title page, an outline, then for every lesson a divider,
# every figure the lesson links in the lesson's order, one page each (the figures of a table
# row too; an animation, a .gif, as 4 of its frames, 2 × 2), a page of take-aways, a page of
# questions and one of their answers; then a closing summary (one line per lesson), a
# questions page, and the references. Each figure page: the figure (its SVG, so the page
# stays vector; PNG when it has no SVG), the figure's own title as the page's one title, and
# its caption (the italic paragraph under it in the lesson), CAPLINES lines at most, whole
# sentences: when the page shows less than the whole caption (or leaves out a parenthesis
# of inline code), its note ends with the whole caption and a cut page says "(continued in
# the notes)". Every page has a page number; every text is at least 18 px at 1280×720
# (tests/slides/ measures it).
#
# Sources. The figures, captions and lesson titles are read from the lessons as they are
# (lessons/lessonN.md): a figure linked or unlinked changes the deck without a list to keep.
# What only a lecture has — title, outline notes, take-aways, questions and answers,
# references, speaker notes — is in one file, lessons/deck.md (its header says the format).
# A figure page without a note of its own there gets, as its note, the lesson's paragraph
# that leads to the figure. Words of the deck's own (Outline, Lesson, …) are in one string
# table, plots/slides.LANG.tsv (SLIDES_LANG, default en): a second language is a second
# table, its lessons' folder (lessons/LANG/) and its deck.md.
#
# Bad input (a linked figure that does not exist, an SVG rsvg-convert cannot read, a PNG or
# GIF that is not one, an animation without its frames): one line naming the file, exit 2,
# and OUT and its notes are left as they were (both are written to temporary files and
# renamed at the end). Needs rsvg-convert (librsvg2-bin).
#   SLIDES_LAYOUT=FILE  also write, for tests/slides/, one line per figure shown:
#                       page, kind, file, its width on the page and its own width (px)
# A page of the deck is a page of a PDF: LaTeX takes it with
#   \includegraphics[page=N]{plots/slides.pdf}
# and PowerPoint or Keynote take the figure's SVG (plots/lessonN/NAME.svg) or a page
# exported as an image (pdftocairo -png -scale-to 1280 -f N -l N plots/slides.pdf page).
set -eu
out=${1:-plots/slides.pdf}
lang=${SLIDES_LANG:-en}
here=$(dirname "$0")    # this script's folder: its awk program and string tables
strings=$here/slides.$lang.tsv
case $lang in en) ldir=lessons ;; *) ldir=lessons/$lang ;; esac
deck=$ldir/deck.md
notes=${out%.pdf}.notes.md
fail() { echo "slides: $*" >&2; exit 2; }
command -v rsvg-convert > /dev/null 2>&1 ||
    fail "rsvg-convert not found; install it: apt-get install librsvg2-bin"
[ -f "$strings" ] || fail "no string table $strings for SLIDES_LANG=$lang"
[ -f "$deck" ] || fail "no lecture source $deck (title, take-aways, questions, references)"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvscope-slides.XXXXXX")
trap 'rm -rf "$tmp" plots/.slide$$.*.svg "$out.tmp.$$" "$notes.tmp.$$"' EXIT
export LC_ALL=C

# 1. What the lessons show, in their order, one line per thing (fields split by tabs):
#    L n md title why                       a lesson (why: its "Why it matters" paragraph)
#    F n md file alt caption lead           a figure (lead: the paragraph leading to it)
#    G n md file alt caption lead           an animation
#    T n md files alts heads caption lead   figures in a table row ('|' between cells)
for md in $(ls "$ldir"/lesson[0-9]*.md 2> /dev/null | sort -V); do
    n=${md#"$ldir"/lesson}; n=${n%.md}
    awk -v n="$n" -v md="$md" '
    # keep: 1 keeps the backquotes of inline code (a caption: the deck moves its code to the notes)
    function clean(s, keep) {
        gsub(/\t/, " ", s)
        gsub(/\(\[SVG\]\([^)]*\)\)/, "", s); gsub(/\[SVG\]\([^)]*\)/, "", s)
        while (match(s, /\[[^]]*\]\([^)]*\)/)) {
            t = substr(s, RSTART + 1, RLENGTH); sub(/\]\(.*/, "", t)
            s = substr(s, 1, RSTART - 1) t substr(s, RSTART + RLENGTH)
        }
        gsub(/\*\*/, "", s); if (!keep) gsub(/`/, "", s)
        gsub(/  +/, " ", s); sub(/^ +/, "", s); sub(/ +$/, "", s)
        return s
    }
    # the italic span a caption paragraph starts with (bold inside it skipped)
    function italic(p,   i, c) {
        if (substr(p, 1, 1) != "*" || substr(p, 1, 2) == "**") return ""
        for (i = 2; i <= length(p); i++) {
            if (substr(p, i, 2) == "**") { i++; continue }
            if (substr(p, i, 1) == "*") return substr(p, 2, i - 2)
        }
        return substr(p, 2)
    }
    # the text that leads to a figure: the paragraph before it (with the one before that,
    # when it is a short lead-in such as "And over a longer run:"); used up by the figure
    function leadin(   l) {
        l = (para != "" ? para : lastpara)
        if (para != "" && lastpara != "" && length(para) < 120) l = lastpara " " para
        if (l != "" && length(l) < 120 && sect != "") l = sect ". " l
        para = ""; lastpara = ""
        return l
    }
    function path(link,   p) { p = link; sub(/^(\.\.\/)+/, "", p); return p }
    # a figure right under a heading has no paragraph leading to it: its note is the
    # paragraph after it (held until that paragraph ends), else the heading
    function emit(cap,   rec) {
        if (kind == "") return
        flushheld(sect)
        rec = kind "\t" n "\t" md "\t" files "\t" alts (kind == "T" ? "\t" heads : "") "\t" clean(italic(cap), 1) "\t"
        if (lead == "") held = rec; else print rec clean(lead)
        kind = ""
    }
    function flushheld(s) { if (held != "") print held clean(s); held = "" }
    function cells(s, arr,   m, i) {
        sub(/^ *\|/, "", s); sub(/\| *$/, "", s)
        m = split(s, arr, "|")
        for (i = 1; i <= m; i++) { sub(/^ +/, "", arr[i]); sub(/ +$/, "", arr[i]) }
        return m
    }
    # every ![alt](../plots/…) in a line: into files and alts, "|"-separated
    function images(s,   k, a, f, cnt) {
        files = ""; alts = ""; cnt = 0
        while (match(s, /!\[[^]]*\]\([^)]*\)/)) {
            a = substr(s, RSTART + 2, RLENGTH - 2); f = a
            sub(/\]\(.*/, "", a); sub(/^[^]]*\]\(/, "", f); sub(/\)$/, "", f)
            s = substr(s, RSTART + RLENGTH)
            if (f !~ /plots\//) continue
            f = path(f)
            if (seen[f]++) continue
            files = files (cnt ? "|" : "") f; alts = alts (cnt ? "|" : "") clean(a); cnt++
        }
        return cnt
    }
    BEGIN { kind = ""; para = ""; lastpara = ""; incode = 0; intable = 0; capwait = 0 }
    /^```/ { incode = !incode; next }
    incode { next }
    FNR == 1 && /^# / {
        title = $0; sub(/^# +/, "", title)
        if (index(title, "— ") > 0) title = substr(title, index(title, "— ") + 4)
        next
    }
    {
        line = $0
        # a caption, or what comes instead of one, after a figure
        if (capwait == 1 && line ~ /^[ \t]*$/) next
        if (capwait == 1) {
            if (line ~ /^\*[^*]/) { capwait = 2; cap = line; next }
            capwait = 0; emit("")
        } else if (capwait == 2) {
            if (line !~ /^[ \t]*$/) { cap = cap " " line; next }
            capwait = 0; emit(cap)
        }
        if (line ~ /^\|/) {
            if (!intable) { intable = 1; nh = cells(line, hd) }
            if (line ~ /!\[/ && (kind == "" || !emit("")) && images(line) > 0) {
                k = cells(line, cl); heads = ""; nimg = split(files, tmpf, "|")
                # the heads of the columns that hold a figure
                hs = ""; c = 0
                for (i = 1; i <= k; i++) if (cl[i] ~ /!\[/) { hs = hs (c++ ? "|" : "") (i in hd ? clean(hd[i]) : ""); }
                heads = hs
                kind = (nimg > 1 ? "T" : "F"); lead = leadin()
                if (kind == "F") { heads = "" }
            }
            next
        }
        if (intable && kind != "") { intable = 0; capwait = 1; if (line ~ /^\*[^*]/) { capwait = 2; cap = line }; next }
        intable = 0
        if (line ~ /!\[[^]]*\]\([^)]*plots\//) {
            if (images(line) > 0) {
                lead = leadin()
                kind = (files ~ /\.gif$/ ? "G" : "F")
                if (index(files, "|")) { kind = "T"; heads = alts }
                capwait = 1
            }
            next
        }
        if (line ~ /^[ \t]*$/) {
            if (para ~ /^\*\*Why it matters\.\*\*/) why = para
            if (para != "") { if (held != "") flushheld(para); else lastpara = para }
            para = ""; next
        }
        if (line ~ /^#/) { flushheld(sect); sect = line; sub(/^#+ */, "", sect); para = ""; lastpara = ""; next }
        para = (para == "" ? line : para " " line)
    }
    END {
        if (capwait == 2) emit(cap); else emit("")
        flushheld(para != "" ? para : sect)
        sub(/^\*\*Why it matters\.\*\* */, "", why)
    }
    END { print "L\t" n "\t" md "\t" clean(title) "\t" clean(why) }
    ' "$md" > "$tmp/lesson.tsv"
    # the lesson line first, then its figures in order
    grep '^L' "$tmp/lesson.tsv"
    grep -v '^L' "$tmp/lesson.tsv" || true
done > "$tmp/items.tsv"
grep -q '^[FGT]' "$tmp/items.tsv" || fail "the lessons in $ldir link no figures (run make lessons first)"

# 2. Every figure checked before a page is drawn, its size read: one line per file,
#    "file width height shown" (shown: the file a page embeds: the SVG twin when there
#    is one). An animation's frames are the staircase figures of its steps, in order.
size_of() {
    case $1 in
    *.png) [ "$(od -An -c -j1 -N3 "$1" | tr -d ' ')" = PNG ] || return 1
           od -An -tu1 -j16 -N8 "$1" | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4, $5 * 16777216 + $6 * 65536 + $7 * 256 + $8 }' ;;
    *.gif) [ "$(od -An -c -N3 "$1" | tr -d ' ')" = GIF ] || return 1
           od -An -tu1 -j6 -N4 "$1" | awk '{ print $1 + 256 * $2, $3 + 256 * $4 }' ;;
    *.svg) sed -n '1,5{s/.*<svg[^>]*[^a-z]width="\([0-9.]*\)[a-z]*"[^>]*[^a-z]height="\([0-9.]*\)[a-z]*".*/\1 \2/p}' "$1" | head -1 ;;
    *) return 1 ;;
    esac
}
check_figure() { # FILE MD
    [ -f "$1" ] || fail "$2 links $1, which does not exist (make lessons, or make timing for plots/measured/)"
    shown=$1
    case $1 in *.png) [ -f "${1%.png}.svg" ] && shown=${1%.png}.svg ;; esac
    sz=$(size_of "$1") || fail "$1 (linked by $2) is not a ${1##*.} file"
    case $shown in *.svg)
        if ! err=$(rsvg-convert -w 32 -h 18 "$shown" 2>&1 > /dev/null); then
            fail "$shown (the SVG of a figure $2 links) cannot be read by rsvg-convert: $(printf '%s' "$err" | head -1)"
        fi ;;
    esac
    [ -n "$sz" ] || fail "$1 (linked by $2): cannot read its width and height"
    printf '%s %s %s\n' "$1" "$sz" "$shown"
}
tab=$(printf '\t')
while IFS=$tab read -r kind n md files rest; do
    case $kind in L) continue ;; esac
    oldifs=$IFS; IFS='|'
    for f in $files; do
        IFS=$oldifs
        check_figure "$f" "$md"
        case $f in *.gif)
            d=$(dirname "$f"); b=$(basename "$f" .gif)
            frames=$(ls "$d/${b%%_*}"_s[0-9][0-9][0-9]_"${b#*_}".png 2> /dev/null | sort) ||
                fail "$f (linked by $md) is an animation whose frames, $d/${b%%_*}_sNNN_${b#*_}.png, do not exist"
            for fr in $frames; do check_figure "$fr" "$md" | sed 's/^/frame /'; done ;;
        esac
    done
    IFS=$oldifs
done < "$tmp/items.tsv" > "$tmp/sizes.txt"

# 3. The pages: an SVG each, the speaker notes, the layout.
# librsvg loads an image only from the page's folder or below it: the pages are written
# into plots/ for the time it takes to join them
awk -F'\t' -v strings="$strings" -v deck="$deck" -v sizes="$tmp/sizes.txt" \
    -v pagepre="plots/.slide$$." -v notes="$tmp/notes.md" -v layout="$tmp/layout.tsv" \
    -v list="$tmp/pages.txt" -v LONGCAP="$tmp/longcaps.txt" -f "$here/slides.awk" "$tmp/items.tsv"
# the captions a page shows in part: a list for whoever shortens them in the lessons
[ ! -s "$tmp/longcaps.txt" ] || cat "$tmp/longcaps.txt"

# 4. One PDF; a fixed date (cairo reads SOURCE_DATE_EPOCH): the same input gives the same
#    bytes. Both outputs renamed into place only when both are whole.
pages=$(cat "$tmp/pages.txt")
# shellcheck disable=SC2086
SOURCE_DATE_EPOCH=0 rsvg-convert -f pdf -o "$tmp/deck.pdf" $pages ||
    fail "rsvg-convert could not join the pages into $out"
count=$(wc -w < "$tmp/pages.txt" | tr -d ' ')
mv "$tmp/deck.pdf" "$out.tmp.$$"
mv "$tmp/notes.md" "$notes.tmp.$$"
mv "$out.tmp.$$" "$out"
mv "$notes.tmp.$$" "$notes"
[ -z "${SLIDES_LAYOUT:-}" ] || cp "$tmp/layout.tsv" "$SLIDES_LAYOUT"
echo "slides: wrote $out ($count pages) and $notes"
