# style.gp — the shared look of kvscope's charts, loaded by every plots/*.gp after `reset`:
#     load 'plots/style.gp'                                       (lessons, from the root)
#     load (exists('scripts') ? scripts : 'plots').'/style.gp'    (the charts kvscope draws)
# scripts is the folder of the chart scripts: kvscope sets it from --scripts, so its
# charts draw from any folder; by hand, from the repository root, it is plots.
# Grey L-shaped border, tics outside, light grid, Okabe-Ito colours (colour-blind safe),
# 16:9 PNG (1600x900) and SVG from one PDF, and helpers that check a script's inputs.
#
# Line styles (defined here, after any palette, so nothing overwrites them):
#   1 blue   #0072B2  "with the KV cache"      2 vermillion #D55E00  "without the cache"
#   3 green  #009E73                            4 orange     #E69F00
#   5 purple #CC79A7                            6 sky blue   #56B4E9
#   7 black  #000000                            8 grey       #999999  (reference lines)

if (!exists('scripts')) scripts = 'plots'
set encoding utf8
set datafile separator ','
set border 3 linecolor rgb '#808080' linewidth 1.5
set tics nomirror out scale 0.75
set tics textcolor rgb '#333333'
set grid xtics ytics mxtics mytics linecolor rgb '#dcdcdc' linewidth 1 dashtype solid, linecolor rgb '#eeeeee' linewidth 1 dashtype solid
set key opaque box linecolor rgb '#d0d0d0' samplen 2.5 spacing 1.2
set title font ',28'
set xlabel font ',24'
set ylabel font ',24'

# Okabe-Ito, as a palette (for images) and as line styles (for lines and points)
set palette defined (0 '#0072B2', 1 '#56B4E9', 2 '#009E73', 3 '#F0E442', 4 '#E69F00', 5 '#D55E00')
set style line 1 linecolor rgb '#0072B2' linewidth 3 pointtype 7 pointsize 1.6
set style line 2 linecolor rgb '#D55E00' linewidth 3 pointtype 5 pointsize 1.5
set style line 3 linecolor rgb '#009E73' linewidth 3 pointtype 9 pointsize 1.7
set style line 4 linecolor rgb '#E69F00' linewidth 3 pointtype 13 pointsize 1.7
set style line 5 linecolor rgb '#CC79A7' linewidth 3 pointtype 11 pointsize 1.7
set style line 6 linecolor rgb '#56B4E9' linewidth 3 pointtype 7 pointsize 1.6
set style line 7 linecolor rgb '#000000' linewidth 3 pointtype 6 pointsize 1.6
set style line 8 linecolor rgb '#999999' linewidth 2 dashtype 2
set style increment user

# The two outputs of every chart: out.'.png' (1600x900) and out.'.svg'. A script draws
# one PDF (pdfcairo, 800x450 pt: fonts and lines at the sizes a 1600x900 PNG shows them)
# and plots/publish.sh renders both files from it, so the SVG is the PNG's twin, its
# glyphs outlined. A script draws in a loop, then publishes:
#     do for [fmt in FORMATS] { evaluate terminal(fmt); ...set and plot...; set output }
#     evaluate publish(out)
# One font for Latin and CJK text: WenQuanYi Zen Hei (Debian fonts-wqy-zenhei).
FORMATS = 'pdf'
FONT = 'WenQuanYi Zen Hei,23'
terminal(fmt) = sprintf("set terminal pdfcairo size 800/72.0,450/72.0 enhanced font '%s' linewidth 1.5 pointscale 0.5 background rgb 'white'; set output '%s.pdf'", FONT, out)
publish(o) = sprintf("system \"sh '%s/publish.sh' '%s'\"; if (GPVAL_SYSTEM_ERRNO != 0) { exit error '%s/publish.sh failed for %s' }", scripts, o, scripts, o)

# Input checks. A script calls
#     evaluate need_vars('in out')
#     evaluate need_columns(in, 'T flops_cache ...')
# and stops with a message naming the missing variable, file or column.
need_vars_from(names, i) = i > words(names) ? '' : \
    (exists(word(names, i)) ? need_vars_from(names, i + 1) \
     : sprintf("exit error \"missing variable %s: run as gnuplot -e \\\"in='file.csv'; out='path/without/extension'\\\" %s\"", word(names, i), ARG0))
need_vars(names) = need_vars_from(names, 1)
header_of(file) = system(sprintf("head -n 1 '%s' 2>/dev/null | tr -d '\\r'", file))
first_missing(h, cols, i) = i > words(cols) ? '' : \
    (strstrt(','.h.',', ','.word(cols, i).',') > 0 ? first_missing(h, cols, i + 1) : word(cols, i))
need_columns(file, cols) = header_of(file) eq '' \
    ? sprintf("exit error \"cannot read %s (or it is empty)\"", file) \
    : (first_missing(header_of(file), cols, 1) eq '' ? '' \
       : sprintf("exit error \"%s has no column '%s' (needs: %s)\"", file, first_missing(header_of(file), cols, 1), cols))
