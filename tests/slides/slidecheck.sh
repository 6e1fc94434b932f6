#!/bin/sh
# slidecheck.sh — the lecture deck (plots/slides.sh) as a projector shows it; what
# `make check-slides` (part of `make check`) runs:
#   sh tests/slides/slidecheck.sh FIGTEXT
# FIGTEXT is tests/figcheck/figtext, which lists every text of a cairo SVG with its box and
# its size (read from the font's .notdef glyph, not from the font-size the page asked for).
# The deck is built into a scratch folder (plots/slides.pdf is not touched), then:
#   - every page, turned into SVG by poppler (pdftocairo) and scaled to 1280 × 720: every
#     text at least 18 px, inside the page, and no two lines of text overlapping;
#   - every figure the lessons link (an independent grep of the lessons) is on a page, and
#     every caption is whole: its first and last words are in the page text (pdftotext),
#     or, for a caption its page shows in part (3 lines at most), all of it in the notes;
#     and no page shows a "…" that no lesson has;
#   - the speaker notes have one non-empty section per page;
#   - the text of the figures themselves, as shown: each figure's smallest text (figtext at
#     its own size) times the scale the page shows it at. Reported, and a failure only with
#     SLIDES_STRICT=1: that text is the figures' (tests/figcheck/), the deck cannot change it.
#     The frames of an animation's strip are thumbnails, listed apart.
#   - bad input, in a scratch copy of the deck's sources: a lesson linking a missing figure,
#     and one linking a figure whose SVG librsvg cannot read, each stop make slides with
#     exit 2 and one line naming the file, and leave the PDF there before untouched.
# First the measurement proves it can tell: a page with a 17 px text fails, 18 px passes.
set -eu
FT=$1
MIN=18
for t in rsvg-convert pdftocairo pdftotext pdfinfo; do
    if ! command -v $t > /dev/null 2>&1; then
        echo "check-slides: skipped: $t is missing (apt-get install librsvg2-bin poppler-utils)"
        exit 0
    fi
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvscope-slidecheck.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "check-slides: $*" >&2; fail=1; }

# measure PDF FIRST LAST: one line per text run on pages FIRST..LAST:
# "page x0 x1 y0 y1 px" in pixels of the page at 1280 × 720
measure() {
    p=$2
    while [ "$p" -le "$3" ]; do
        pdftocairo -svg -f "$p" -l "$p" "$1" "$tmp/page.svg"
        # poppler writes the page in points; the same page at 1280 px wide
        w=$(sed -n 's/.*<svg[^>]* width="\([0-9.]*\)pt".*/\1/p' "$tmp/page.svg" | head -1)
        sed "s/width=\"${w}pt\" height=\"\([0-9.]*\)pt\"/width=\"1280\" height=\"$(awk -v w="$w" 'BEGIN { print 720 * w / 1280 }')\"/" "$tmp/page.svg" > "$tmp/page1280.svg"
        # figtext scales to the width the SVG says: boxes and sizes in those pixels
        "$FT" --list "$tmp/page1280.svg" | grep "^the text at" | awk -v p="$p" '
            { line = $0; gsub(/[(),-]/, " ", line); n = split(line, a, " ")
              # the text at x X0 X1 y Y0 Y1 N glyph(s) PX px
              print p, a[5], a[6], a[8], a[9], a[n - 1] }'
        p=$((p + 1))
    done
}
# judge the runs of measure: sizes, the page's bounds, lines overlapping
judge() {
    awk -v min="$MIN" '
    { P[NR] = $1; X0[NR] = $2; X1[NR] = $3; Y0[NR] = $4; Y1[NR] = $5; PX[NR] = $6
      if ($6 < min - 0.05) printf "page %d: a text at x %d-%d, y %d-%d is %.1f px (under %d)\n", $1, $2, $3, $4, $5, $6, min
      if ($2 < 0 || $3 > 1280.5 || $4 < 0 || $5 > 720.5) printf "page %d: a text at x %d-%d, y %d-%d runs off the page\n", $1, $2, $3, $4, $5 }
    END {
        # two runs of different lines whose boxes cross by > 1 px; runs of one line (a
        # string cairo split where the font changes) share their top or their bottom
        for (i = 1; i <= NR; i++) for (j = i + 1; j <= NR && P[j] == P[i]; j++) {
            tol = 0.35 * (PX[i] < PX[j] ? PX[i] : PX[j])
            if ((Y0[i] - Y0[j]) ^ 2 < tol ^ 2 || (Y1[i] - Y1[j]) ^ 2 < tol ^ 2) continue
            ox = (X1[i] < X1[j] ? X1[i] : X1[j]) - (X0[i] > X0[j] ? X0[i] : X0[j])
            oy = (Y1[i] < Y1[j] ? Y1[i] : Y1[j]) - (Y0[i] > Y0[j] ? Y0[i] : Y0[j])
            if (ox > 1 && oy > 1) printf "page %d: the text at x %d-%d, y %d-%d overlaps the one at x %d-%d, y %d-%d\n", P[i], X0[i], X1[i], Y0[i], Y1[i], X0[j], X1[j], Y0[j], Y1[j]
        }
    }'
}

# 1. The measurement can tell 17 px from 18 px.
mkdir -p "$tmp/probe"
printf '%s\n' '<svg xmlns="http://www.w3.org/2000/svg" width="1280" height="720" viewBox="0 0 1280 720">' \
    '<rect width="1280" height="720" fill="white"/>' \
    '<text x="40" y="100" font-family="DejaVu Sans" font-size="18">eighteen pixels</text>' \
    '<text x="40" y="200" font-family="DejaVu Sans" font-size="17">seventeen pixels</text>' \
    '<text x="40" y="209" font-family="DejaVu Sans" font-size="18">overlapping line</text>' '</svg>' > "$tmp/probe/p.svg"
rsvg-convert -f pdf -o "$tmp/probe/p.pdf" "$tmp/probe/p.svg"
res=$(measure "$tmp/probe/p.pdf" 1 1 | judge)
case $res in *"17.0 px (under 18)"*"overlaps"*) ;; *)
    echo "check-slides: the probe page (17 px text, two overlapping lines) is not caught: the check is broken ($res)" >&2
    exit 1 ;;
esac
if printf '%s\n' "$res" | grep 'under' | grep -qv ' 17\.0 px'; then
    echo "check-slides: the probe's 18 px text is flagged: $res" >&2; exit 1
fi

# 2. The deck as make slides builds it.
SLIDES_LAYOUT="$tmp/layout.tsv" sh plots/slides.sh "$tmp/deck.pdf" > "$tmp/build.log" 2>&1 || {
    cat "$tmp/build.log" >&2; echo "check-slides: make slides failed" >&2; exit 1; }
pages=$(pdfinfo "$tmp/deck.pdf" | awk '/^Pages:/ { print $2 }')
measure "$tmp/deck.pdf" 1 "$pages" > "$tmp/runs.txt"
judge < "$tmp/runs.txt" > "$tmp/judged.txt"
while IFS= read -r l; do bad "$l"; done < "$tmp/judged.txt"
smallest=$(awk 'NR == 1 || $6 < m { m = $6 } END { printf "%.1f", m }' "$tmp/runs.txt")
runs=$(wc -l < "$tmp/runs.txt" | tr -d ' ')

# every linked figure on a page
grep -oh '!\[[^]]*\]([^)]*plots/[^)]*)' lessons/lesson[0-9]*.md | sed 's/.*(\(\.\.\/\)*//; s/)$//' | sort -u > "$tmp/linked.txt"
cut -f3 "$tmp/layout.tsv" | sort -u > "$tmp/shown.txt"
linked=$(wc -l < "$tmp/linked.txt" | tr -d ' ')
for f in $(cat "$tmp/linked.txt"); do
    case $f in
    *.gif) d=$(dirname "$f"); b=$(basename "$f" .gif)
           grep -q "^$d/${b%%_*}_s[0-9]*_${b#*_}" "$tmp/shown.txt" || bad "the animation $f has no frames in the deck" ;;
    *) grep -qx "$f" "$tmp/shown.txt" || bad "$f, linked by a lesson, is on no page of the deck" ;;
    esac
done

# every caption whole: its first and last five words in the deck's text
pdftotext -enc UTF-8 "$tmp/deck.pdf" - | tr '\n\f' '  ' | tr -s ' ' > "$tmp/text.txt"
for md in lessons/lesson[0-9]*.md; do
    awk '/!\[[^]]*\]\([^)]*plots\// { want = 1; next }
         want && /^[ \t]*$/ { if (cap != "") { print cap; cap = ""; want = 0 } ; next }
         want && cap == "" && /^\*[^*]/ { cap = $0; next }
         want && cap != "" { cap = cap " " $0; next }
         want && !/^\|/ { want = 0 }
         END { if (cap != "") print cap }' "$md"
done | sed 's/^\*//; s/\*[ (].*//; s/\*$//; s/`//g; s/\*\*//g; s/\[\([^]]*\)\]([^)]*)/\1/g' | tr -s ' ' > "$tmp/captions.txt"
# the notes as one line per paragraph, spaces squeezed: a caption the page shows in part is
# whole in its page's note
notes="$tmp/deck.notes.md"
tr -s ' ' < "$notes" > "$tmp/notes.txt"
ncap=0 nnotes=0
while IFS= read -r cap; do
    ncap=$((ncap + 1))
    first=$(printf '%s\n' "$cap" | awk '{ for (i = 1; i <= 5 && i <= NF; i++) printf "%s%s", (i > 1 ? " " : ""), $i }')
    last=$(printf '%s\n' "$cap" | awk '{ s = NF > 5 ? NF - 4 : 1; for (i = s; i <= NF; i++) printf "%s%s", (i > s ? " " : ""), $i }')
    if grep -qF -- "$first" "$tmp/text.txt" && grep -qF -- "$last" "$tmp/text.txt"; then continue; fi
    # not whole on the pages: the page starts it (or shows a side of it) and the notes hold it whole
    whole=$(printf '%s' "$cap" | sed 's/ *$//')
    if grep -qF -- "$whole" "$tmp/notes.txt"; then nnotes=$((nnotes + 1)); continue; fi
    bad "a caption is neither whole on the pages nor whole in the notes: \"$first … $last\""
done < "$tmp/captions.txt"
grep -q '…' "$tmp/text.txt" && ! grep -qh '…' lessons/lesson[0-9]*.md && bad "the deck has a … that no lesson has: a cut caption?"

# speaker notes: one non-empty section per page
nn=$(awk '/^## [0-9]+ / { n++; k = $2; getline; getline; if ($0 !~ /[^ ]/) printf "page %d has an empty note\n", k > "/dev/stderr" } END { print n + 0 }' "$notes" 2> "$tmp/empty.txt")
[ "$nn" = "$pages" ] || bad "the notes have $nn sections for $pages pages"
while IFS= read -r l; do bad "notes: $l"; done < "$tmp/empty.txt"

# the figures' own text as shown on the pages
figsmall=0 figpages=0 strips=0
while IFS="$(printf '\t')" read -r page kind file shown own; do
    svg=${file%.png}.svg
    if [ "$kind" = strip ]; then strips=$((strips + 1)); continue; fi
    figpages=$((figpages + 1))
    if [ ! -f "$svg" ]; then echo "check-slides: note: $file (page $page) has no SVG: its text is not measured"; continue; fi
    m=$("$FT" --list "$svg" | grep "^the text at" | sed -n 's/.*, \([0-9.]*\) px)$/\1/p' | sort -n | head -1)
    [ -n "$m" ] || continue
    # figtext sizes are at the figure's published size (its PNG's width)
    pw=$(sed -n '1,5{s/.*<svg[^>]* width="\([0-9.]*\)\(px\)*".*/\1/p}' "$svg" | head -1) # cairo: "1600px", gnuplot: "1600"
    px=$(awk -v m="$m" -v s="$shown" -v w="$pw" 'BEGIN { printf "%.1f", m * s / w }')
    echo "$page $file $px" >> "$tmp/figall.txt"
    if awk -v p="$px" -v min="$MIN" 'BEGIN { exit !(p < min) }'; then
        figsmall=$((figsmall + 1))
        echo "$page $file $px" >> "$tmp/figsmall.txt"
    fi
done < "$tmp/layout.tsv"
if [ -s "$tmp/figall.txt" ]; then
    least=$(sort -k3 -n "$tmp/figall.txt" | head -1)
    echo "check-slides: the figures' smallest own text as shown: $(echo "$least" | cut -d' ' -f3) px ($(echo "$least" | cut -d' ' -f2), page ${least%% *})"
fi
if [ "$figsmall" -gt 0 ]; then
    worst=$(sort -k3 -n "$tmp/figsmall.txt" | head -1)
    msg="figures' own text under $MIN px as shown: $figsmall of $figpages figure pages (smallest: page ${worst%% *}, $(echo "$worst" | cut -d' ' -f2) at $(echo "$worst" | cut -d' ' -f3) px)"
    sort -k3 -n "$tmp/figsmall.txt" | awk '{ printf "check-slides: note: page %d: %s, smallest text %s px as shown\n", $1, $2, $3 }'
    if [ "${SLIDES_STRICT:-0}" = 1 ]; then bad "$msg"; else echo "check-slides: note: $msg; those figures are tests/figcheck's to fix (SLIDES_STRICT=1 fails on it)"; fi
fi

# 3. Bad input, in a scratch copy: nothing half-written, one line naming the file.
s="$tmp/bad"
mkdir -p "$s/plots/x" "$s/lessons"
cp plots/slides.sh plots/slides.awk plots/slides.en.tsv "$s/plots/"
cp lessons/deck.md "$s/lessons/"
first=$(head -1 "$tmp/linked.txt")
cp "$first" "$s/plots/x/good.png"
printf '# Lesson 1 — Probe\n\n![good](../plots/x/good.png)\n\n*A caption.*\n' > "$s/lessons/lesson1.md"
(cd "$s" && sh plots/slides.sh plots/slides.pdf > /dev/null 2>&1) || bad "the scratch deck with one good figure does not build"
cp "$s/plots/slides.pdf" "$tmp/before.pdf"
printf '\n![gone](../plots/x/missing.png)\n' >> "$s/lessons/lesson1.md"
rc=0; err=$(cd "$s" && sh plots/slides.sh plots/slides.pdf 2>&1 > /dev/null) || rc=$?
[ "$rc" = 2 ] && [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] && case $err in *plots/x/missing.png*) true ;; *) false ;; esac ||
    bad "a lesson linking a missing figure: exit $rc, \"$err\" (want exit 2 and one line naming plots/x/missing.png)"
cmp -s "$s/plots/slides.pdf" "$tmp/before.pdf" || bad "a failed make slides changed the PDF that was there"
sed -i '$d' "$s/lessons/lesson1.md"
cp "$first" "$s/plots/x/broken.png"
printf '<svg xmlns="http://www.w3.org/2000/svg"><rect width="10" height=' > "$s/plots/x/broken.svg"
printf '\n![broken](../plots/x/broken.png)\n' >> "$s/lessons/lesson1.md"
rc=0; err=$(cd "$s" && sh plots/slides.sh plots/slides.pdf 2>&1 > /dev/null) || rc=$?
[ "$rc" = 2 ] && [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] && case $err in *plots/x/broken.svg*) true ;; *) false ;; esac ||
    bad "a figure whose SVG librsvg cannot read: exit $rc, \"$err\" (want exit 2 and one line naming plots/x/broken.svg)"
cmp -s "$s/plots/slides.pdf" "$tmp/before.pdf" || bad "a failed make slides changed the PDF that was there"
ls "$s/plots" | grep -q '^\.slide' && bad "a failed make slides left its page files in plots/"
ls "$s/plots" | grep -q 'tmp' && bad "a failed make slides left a temporary file in plots/"

if [ $fail = 0 ]; then
    echo "check-slides: $pages pages, $runs texts, the smallest $smallest px (min $MIN); $linked linked figures all shown, $ncap captions whole ($nnotes of them completed in the notes), $nn notes; $strips strip frames as thumbnails; bad input stops with exit 2"
fi
exit $fail
