#!/bin/sh
# publish.sh OUT — a chart's two files from the one PDF gnuplot drew (pdfcairo, 800×450 pt):
# OUT.png (1600×900 px) and OUT.svg (1600×900 px, every glyph an outline), both rendered by
# poppler from the same page, so the SVG shows exactly what the PNG shows, on any machine.
# Called by the scripts in plots/ through style.gp's publish(); OUT.pdf is removed
# (KVSCOPE_KEEP_PDF=1 keeps it, for tests that read its text with pdftotext).
set -eu
out=$1
if ! command -v pdftocairo > /dev/null 2>&1; then
    echo "charts: pdftocairo not found; install it: apt-get install poppler-utils" >&2
    exit 1
fi
pdftocairo -png -singlefile -r 144 "$out.pdf" "$out.tmp"
pdftocairo -svg "$out.pdf" "$out.tmp.svg"
# points → pixels: the page is 800×450 pt, the PNG 1600×900 px
sed '1,3s/width="800pt" height="450pt"/width="1600" height="900"/' "$out.tmp.svg" > "$out.tmp.svg2"
mv "$out.tmp.png" "$out.png"
mv "$out.tmp.svg2" "$out.svg"
rm -f "$out.tmp.svg"
[ "${KVSCOPE_KEEP_PDF:-0}" = 1 ] || rm -f "$out.pdf"
