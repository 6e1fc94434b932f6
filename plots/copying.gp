reset
# copying.gp — greedy copying of many sentences, from `kvscope copying`: how many
# sentences each cache copies (the share of the bytes after the cue equal to the
# sentence's own, in tenths), then the first sentences with what each cache wrote under
# what the sentence says, column by column (a monospaced font).
# Reads, in dir: copying_hist.csv (bin_lo,bin_hi,full,forgetful,window),
# copying_summary.csv (cache,kv_window,sinks,sentences,copied,...) and
# copying_examples.tsv (index, cue, want, full, forgetful, window, three shares; tabs).
# cue (bytes of the cue) and model (optional) name them in the title.
# Writes out.png (1600x900) and out.svg. By hand, from the repository root:
#   gnuplot -e "dir='data/copying'; out='/tmp/copying'; cue=16" plots/copying.gp
load (exists('scripts') ? scripts : 'plots').'/style.gp'  # scripts: this folder, set by kvscope
evaluate need_vars('dir out')
hist = dir.'/copying_hist.csv'
summ = dir.'/copying_summary.csv'
ex = dir.'/copying_examples.tsv'
evaluate need_columns(hist, 'bin_lo bin_hi full forgetful window')
evaluate need_columns(summ, 'cache kv_window sinks sentences copied')
if (!exists('cue')) cue = 16
name = exists('model') ? model : 'the model'

field(file, sep, row, col) = system(sprintf("awk -F'%s' 'NR == %d { printf \"%%s\", $%d }' '%s'", sep, row + 1, col, file))
N = int(field(summ, ',', 1, 4))
copied(row) = int(field(summ, ',', row, 5))
KW = int(field(summ, ',', 3, 2))
KS = int(field(summ, ',', 3, 3))
NEX = int(system(sprintf("awk 'END { print NR - 1 }' '%s'", ex)))
if (NEX > 2) NEX = 2
pct(c) = sprintf('%d of %d copied', c, N)
spaces(n) = n <= 0 ? '' : ' '.spaces(n - 1)
verdict(s) = real(s) >= 0.9 ? sprintf('copied %3.0f %%', 100 * real(s)) : sprintf('       %3.0f %%', 100 * real(s))
MONO = 'DejaVu Sans Mono,15'
# whole sentences on the y axis: a tic every 1, 2, 5, 10, ... sentences
YMAX = 0
do for [col in 'full forgetful window'] { stats hist using col nooutput; if (STATS_max > YMAX) { YMAX = STATS_max } }
ystep(m) = m <= 6 ? 1 : m <= 12 ? 2 : m <= 30 ? 5 : 10

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set multiplot
    set title sprintf("Copying a sentence just read, %s: %d sentences, cue of %d bytes", name, N, cue) noenhanced
    # top: sentences per tenth of the share of bytes equal
    set origin 0, 0.47
    set size 1, 0.53
    set lmargin 10
    set bmargin 3.2
    set style data histograms
    set style histogram clustered gap 1
    set style fill solid 0.85 border -1
    set boxwidth 0.9
    set yrange [0:*]
    set ytics ystep(YMAX)
    set ylabel 'sentences'
    set xlabel 'share of the bytes after the cue equal to the sentence (%)' offset 0, 0.4
    set xtics font ',16'
    set key outside right top vertical font ',16' samplen 1.5 noopaque
    plot hist using 'full':xtic(sprintf('%d–%d', column('bin_lo'), column('bin_hi'))) linecolor rgb '#0072B2' \
             title sprintf('full cache: %s', pct(copied(1))), \
         '' using 'forgetful' linecolor rgb '#D55E00' title sprintf('forgetful: %s', pct(copied(2))), \
         '' using 'window' linecolor rgb '#009E73' title sprintf('window %d: %s', KW, pct(copied(3)))
    unset title
    # bottom: the first sentences, what each cache wrote under what the sentence says
    set origin 0, 0
    set size 1, 0.47
    unset key
    unset border
    unset tics
    unset grid
    unset xlabel
    unset ylabel
    set xrange [0:1]
    set yrange [0:1]
    set lmargin 0
    set rmargin 0
    set tmargin 0
    set bmargin 0
    lines = 4 * NEX
    dy = lines > 0 ? 0.96 / lines : 0.2
    do for [i = 1:NEX] {
        y0 = 0.98 - (i - 1) * 4 * dy
        c = field(ex, '\t', i, 2)
        set label 10 * i + 1 sprintf('%-16s%s%s', 'sentence:', c, field(ex, '\t', i, 3)) at screen 0.02, screen (y0 * 0.47) font MONO noenhanced textcolor rgb '#000000'
        set label 10 * i + 2 sprintf('%-16s%s%s  %s', 'full cache', spaces(strlen(c)), field(ex, '\t', i, 4), verdict(field(ex, '\t', i, 7))) at screen 0.02, screen ((y0 - dy) * 0.47) font MONO noenhanced textcolor rgb '#0072B2'
        set label 10 * i + 3 sprintf('%-16s%s%s  %s', 'forgetful', spaces(strlen(c)), field(ex, '\t', i, 5), verdict(field(ex, '\t', i, 8))) at screen 0.02, screen ((y0 - 2 * dy) * 0.47) font MONO noenhanced textcolor rgb '#D55E00'
        set label 10 * i + 4 sprintf('%-16s%s%s  %s', sprintf('window %d', KW), spaces(strlen(c)), field(ex, '\t', i, 6), verdict(field(ex, '\t', i, 9))) at screen 0.02, screen ((y0 - 3 * dy) * 0.47) font MONO noenhanced textcolor rgb '#009E73'
    }
    plot NaN notitle
    unset multiplot
    unset label
    set output
}
evaluate publish(out)
