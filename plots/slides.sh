#!/bin/sh
# slides.sh OUT — a deck of every lesson's figures: OUT (a PDF, 16:9, one figure per page)
# in lesson order, each page the figure's title (its link text in the lesson), the figure
# (its SVG, so the page stays vector) and a one-line caption (the first sentence of the
# italic caption under the figure in the lesson).
#   sh plots/slides.sh plots/slides.pdf       (what `make slides` runs)
# The figures are those the lessons link now (lessons/lessonN.md, ![title](../plots/….png)),
# so a lesson that gains or loses a figure changes the deck without a list to keep (an
# animation, a .gif, has no page). A linked figure without its SVG is a page with its PNG.
# Needs rsvg-convert (librsvg2-bin).
# A page of the deck is a page of a PDF: LaTeX takes it with
#   \includegraphics[page=N]{plots/slides.pdf}
# and PowerPoint or Keynote take the figure's SVG (plots/lessonN/NAME.svg) or a page
# exported as an image (pdftocairo -png -f N -l N plots/slides.pdf page).
set -eu
out=${1:-plots/slides.pdf}
if ! command -v rsvg-convert > /dev/null 2>&1; then
    echo "slides: rsvg-convert not found; install it: apt-get install librsvg2-bin" >&2
    exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvscope-slides.XXXXXX")
trap 'rm -rf "$tmp" plots/.slide$$.*.svg' EXIT

# One line per figure: lesson<TAB>file<TAB>title<TAB>caption, in the order the lessons
# link them (each figure once).
for md in $(ls lessons/lesson[0-9]*.md 2> /dev/null | sort -V); do
    n=${md#lessons/lesson}; n=${n%.md}
    awk -v n="$n" '
    function flush() { if (file != "") { print n "\t" file "\t" title "\t" cap; file = "" } }
    /^!\[[^]]*\]\(\.\.\/plots\/[^)]*\.png\)/ {
        flush()
        k = index($0, "](../")
        title = substr($0, 3, k - 3)
        file = substr($0, k + 5); sub(/\).*/, "", file)
        if (seen[file]++) { file = ""; next }
        cap = ""; want = 1; next
    }
    want && /^[[:space:]]*$/ { if (cap != "") { want = 0; flush() } ; next }
    want && cap == "" && /^\*/ { cap = $0; next }
    want && cap != "" { cap = cap " " $0; next }
    want { want = 0; flush() }
    END { flush() }
    ' "$md" | awk -F'\t' 'BEGIN { OFS = "\t" }
        function sentence(s,   i, c) {
            gsub(/\*/, "", s); gsub(/`/, "", s); gsub(/\(?\[SVG\]\([^)]*\)\)?/, "", s)
            sub(/^ +/, "", s); sub(/ +$/, "", s)
            i = index(s, ". "); if (i > 0) s = substr(s, 1, i)
            if (length(s) > 140) {
                c = substr(s, 1, 140); i = 0; rest = c
                while (match(rest, /(: | — |; |, )/)) { i += RSTART + RLENGTH - 1; rest = substr(rest, RSTART + RLENGTH) }
                s = (i > 40 ? substr(c, 1, i - 1) : c) " …"
            }
            return s
        }
        { print $1, $2, $3, sentence($4) }'
done > "$tmp/figures.tsv"
[ -s "$tmp/figures.tsv" ] || { echo "slides: the lessons link no figures (run make lessons first)" >&2; exit 1; }

# A page per figure: an SVG of 960×540 with the title, the figure and the caption.
esc() { sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' -e 's/"/\&quot;/g'; }
i=0
pages=""
while IFS="$(printf '\t')" read -r lesson file title cap; do
    [ -f "$file" ] || { echo "slides: lesson $lesson links $file, which does not exist (make lesson$lesson)" >&2; exit 1; }
    i=$((i + 1))
    fig=${file#plots/}
    case $fig in *.png) [ -f "plots/${fig%.png}.svg" ] && fig=${fig%.png}.svg ;; esac
    # librsvg loads an image only from the page's folder or below it: the pages are
    # written into plots/ for the time it takes to join them
    page=plots/.slide$$.$(printf '%03d' $i).svg
    {
        echo '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="960" height="540" viewBox="0 0 960 540">'
        echo '<rect width="960" height="540" fill="white"/>'
        printf '<text x="32" y="40" font-family="WenQuanYi Zen Hei" font-size="24" fill="#222222">%s</text>\n' "$(printf '%s' "$title" | esc)"
        printf '<text x="928" y="40" text-anchor="end" font-family="WenQuanYi Zen Hei" font-size="14" fill="#777777">lesson %s</text>\n' "$lesson"
        printf '<image x="112" y="56" width="736" height="414" preserveAspectRatio="xMidYMid meet" xlink:href="%s"/>\n' "$(printf '%s' "$fig" | esc)"
        printf '<text x="480" y="504" text-anchor="middle" font-family="WenQuanYi Zen Hei" font-size="15" fill="#333333">%s</text>\n' "$(printf '%s' "$cap" | esc)"
        echo '</svg>'
    } > "$page"
    pages="$pages $page"
done < "$tmp/figures.tsv"
# a fixed date (cairo reads SOURCE_DATE_EPOCH): the same figures give the same bytes
# shellcheck disable=SC2086
SOURCE_DATE_EPOCH=0 rsvg-convert -f pdf -o "$tmp/deck.pdf" $pages
mv "$tmp/deck.pdf" "$out"
echo "slides: wrote $out ($i pages)"
