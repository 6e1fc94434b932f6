reset
# bad_text.gp — a figure made bad on purpose, for the self-test of `make check-figures`:
# a label of 8 (10.7 px at the published size, under 14, let alone the 22.5 px a 1600×900 figure needs to show 18 px at 1280×720) and two labels drawn over each
# other. Its SVG is committed as tests/figcheck/bad_text.svg; to redraw it:
#     gnuplot -e "out='tests/figcheck/bad_text'" tests/figcheck/bad_text.gp
load 'plots/style.gp'
evaluate terminal('pdf')
unset border; unset tics; unset grid
set xrange [0:1]; set yrange [0:1]
set title 'A deliberately bad figure'
set label 1 'too small to read' at graph 0.1, 0.8 font ',8'
set label 2 'first label' at graph 0.3, 0.5 font ',20'
set label 3 'second label' at graph 0.35, 0.5 font ',20'
plot -1 notitle
set output
evaluate publish(out)
