#!/bin/sh
# figcheck.sh — look at every committed figure the way a reader's machine would.
#   sh tests/figcheck/figcheck.sh FIGCHECK      (what `make check-figures` runs)
# For plots/lesson*/ and plots/measured/:
#   - every SVG is rendered to PNG by librsvg (rsvg-convert, a renderer that is not
#     cairo's SVG writer nor poppler) at its PNG twin's size, and must match it: same
#     size, and the pixel difference under the thresholds in figcheck.c;
#   - every PNG is at least 800 px on its short side;
#   - every heatmap (a name with _L<layer>, or _ind and _prev: a lesson's chosen head, drawn
#     by kvscope) has a Title chunk and says
#     kvscope drew it;
#   - every SVG's text (figtext.c): each text at least 18 px when the figure is shown at 0.84 of a
#     1280×720 slide (18 · max(W/1280, H/720) / 0.84 px at its published size W×H; a figure
#     tests/figcheck/pending.txt names, with the issue redoing it, keeps the old 14 px) and
#     no two texts overlapping, each failure naming the figure and the texts (their
#     boxes, glyph counts and sizes). Before that, figtext must fail on a figure made
#     bad on purpose (tests/figcheck/bad_text.svg: one text too small, two overlapping),
#     so a check that can no longer fail is caught; and no text running off the figure.
# Prints one line per failure and a summary; exit 1 if anything failed.
set -eu
FC=$1
FT=${2:-$(dirname "$FC")/figtext}
if ! command -v rsvg-convert > /dev/null 2>&1; then
    echo "check-figures: rsvg-convert not found; install it: apt-get install librsvg2-bin" >&2
    exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvscope-figcheck.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0 svgs=0 pngs=0 worst=""
bad=tests/figcheck/bad_text.svg
res=$("$FT" "$bad" || true)
case $res in *"below "*" px"*) ;; *) res="" ;; esac
case $res in *"overlaps"*) ;; *)
    echo "check-figures: the text check misses the small or the overlapping text of $bad, made bad on purpose: the check is broken" >&2
    exit 1 ;;
esac
for png in plots/lesson*/*.png plots/measured/*.png; do
    [ -f "$png" ] || continue
    pngs=$((pngs + 1))
    set -- $("$FC" info "$png" | sed 's/|.*//')
    w=$1 h=$2
    short=$w; [ "$h" -lt "$short" ] && short=$h
    if [ "$short" -lt 800 ]; then echo "check-figures: $png: ${w}x${h}, under 800 px on its short side" >&2; fail=1; fi
    case $(basename "$png") in *_L[0-9]*|*_ind.png|*_prev.png)
        meta=$("$FC" info "$png")
        case $meta in *"kvscope "*"| "?*) ;; *) echo "check-figures: $png: no Title chunk from kvscope ($meta)" >&2; fail=1 ;; esac
    esac
    svg=${png%.png}.svg
    [ -f "$svg" ] || continue
    svgs=$((svgs + 1))
    rsvg-convert -w "$w" -h "$h" -b white "$svg" -o "$tmp/r.png"
    if ! res=$("$FC" same "$png" "$tmp/r.png"); then
        echo "check-figures: $svg does not look like $png: $res" >&2
        fail=1
    fi
    worst="$worst$res $svg
"
    # a figure another issue is redoing keeps the old bar (14 px at its published size)
    # until then: tests/figcheck/pending.txt names it and the issue
    bar=""
    if grep -q "^${svg%.svg}	" tests/figcheck/pending.txt 2>/dev/null; then
        bar="--min-px 14"
        echo "check-figures: $svg held to 14 px until $(grep "^${svg%.svg}	" tests/figcheck/pending.txt | cut -f2-)"
    fi
    if ! "$FT" $bar "$svg" > "$tmp/text" 2>&1; then
        sed 's/^/check-figures: /' "$tmp/text" >&2
        fail=1
    fi
    # every text inside the figure (a title too long for the canvas is cut off)
    off=$("$FT" --list "$svg" | sed -n -E 's/^(the text at x (-?[0-9.]+)-(-?[0-9.]+), y (-?[0-9.]+)-(-?[0-9.]+) .*)/\2 \3 \4 \5 \1/p' |
        awk -v f="$svg" -v w="$w" -v h="$h" '$1 < -0.5 || $2 > w + 0.5 || $3 < -0.5 || $4 > h + 0.5 {
            $1 = $2 = $3 = $4 = ""; sub(/^ +/, ""); print f ": " $0 " runs off the figure" }')
    if [ -n "$off" ]; then printf '%s\n' "$off" | sed 's/^/check-figures: /' >&2; fail=1; fi
done
echo "check-figures: $pngs PNG, $svgs SVG rendered and compared; largest differences:"
printf '%s' "$worst" | sort -t' ' -k3,3gr | head -n 3 | sed 's/^/  /'
[ $fail -eq 0 ] || { echo "check-figures: some figures fail (above)" >&2; exit 1; }
echo "check-figures: every SVG matches its PNG, every PNG is at least 800 px, every heatmap has its title, no text is under 18 px at 0.84 of a 1280x720 slide (the deck), overlaps another or runs off the figure"
