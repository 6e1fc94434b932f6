reset
# lesson7_waste.gp — where a serving cache's memory goes (the vLLM paper's Fig. 2
# question, counted on lesson 7's prompts), and the block table that lets a paged cache
# share a prefix.
# Left: for each way of reserving memory, the share of it over the run that holds tokens,
# is reserved for tokens still to come, is reserved and never filled (internal
# fragmentation), or lies between the sequences' regions unused (external
# fragmentation: a first-fit contiguous arena; none in a paged pool). Reads waste.csv
# from `kvscope batch --paged` (columns strategy, pct_tokens, pct_reservation,
# pct_internal, pct_external).
# Right: prompt `second` starts with prompt `first`'s `prefix` tokens, then `more` of its
# own; blocks of `bs` tokens. Its block table points at the first prompt's full blocks
# (shared, two references each); the block the prefix only partly fills is copied
# before the second prompt writes into it (copy on write). Drawn from those counts
# (summary.csv: prefix_first, prefix_second, prefix_tokens, prefix_new_tokens, block_size).
# By hand, from the repository root:
#   gnuplot -e "in='data/lesson7/paged/waste.csv'; first=1; second=3; prefix=34; more=57; bs=16; out='/tmp/waste'" plots/lesson7_waste.gp
load 'plots/style.gp'
evaluate need_vars('in first second prefix more bs out')
evaluate need_columns(in, 'strategy pct_tokens pct_reservation pct_internal pct_external')
if (prefix < 1 || more < 1 || bs < 1) { exit error sprintf('lesson7_waste: need prefix, more, bs >= 1 (%d, %d, %d)', prefix, more, bs) }

cdiv(a, b) = int((a + b - 1) / b)
nfull = int(prefix / bs)              # blocks the prefix fills: shared as they are
part = prefix % bs                    # tokens of the prefix in its last, partial block
n1 = cdiv(prefix, bs)                 # the first prompt's blocks
n2 = cdiv(prefix + more, bs)          # the second prompt's blocks
if (n2 > 8) { exit error sprintf('lesson7_waste: %d blocks do not fit the drawing (at most 8)', n2) }
C_TOK = '#0072B2'; C_RES = '#56B4E9'; C_INT = '#E69F00'; C_EXT = '#D55E00'
C_SHARED = '#009E73'; C_COW = '#CC79A7'

do for [fmt in FORMATS] {
    evaluate terminal(fmt)
    set multiplot title "Where a serving cache's memory goes, and how a paged cache shares a prefix" font ',24'
    # ---- left: the four shares, one bar per strategy ----
    set origin 0, 0.2
    set size 0.50, 0.72
    set lmargin 14; set rmargin 2; set tmargin 3; set bmargin 3
    set title "share of each way's memory over the run (%)" font ',23'
    set style data histograms
    set style histogram rowstacked
    set style fill solid 1.0 border lc rgb '#ffffff'
    set boxwidth 0.6
    set xrange [-0.6 : 2.6]
    set yrange [0 : 100]
    set ytics 0, 20, 100 font ',23'
    set xtics nomirror out font ',23'
    set grid noxtics ytics
    set key at screen 0.02, screen 0.01 left bottom horizontal Left reverse font ',23' samplen 1.5 width -1 maxcols 1 noopaque nobox
    plot in using 'pct_tokens':xtic(1) lc rgb C_TOK title 'holds tokens', \
         '' using 'pct_reservation' lc rgb C_RES title 'reserved ahead', \
         '' using 'pct_internal' lc rgb C_INT title 'internal fragmentation', \
         '' using 'pct_external' lc rgb C_EXT title 'external fragmentation', \
         '' using 0:(column('pct_tokens') / 2):(sprintf('%.0f %%', column('pct_tokens'))) with labels textcolor rgb '#ffffff' font ',23' notitle
    unset title; unset key; unset grid
    # ---- right: the block tables and the pool ----
    set origin 0.50, 0.02
    set size 0.50, 0.90
    set lmargin 1; set rmargin 1; set tmargin 3; set bmargin 1
    set title sprintf("block tables: prompt %d reuses prompt %d's %d tokens", second, first, prefix) font ',23'
    set xrange [0 : 3.2]
    np = n1 + (part > 0 ? 1 : 0) + (n2 - n1)   # the pool: the first prompt's, the copy, the second's own
    set yrange [np - 0.5 : -1.55]
    unset xtics; unset ytics; unset border
    set style rectangle fillstyle solid 1.0 border lc rgb '#333333' lw 1.5
    o = 0
    set label 1 sprintf("prompt %d's\ntable", first) at 0.45, -1.2 center font ',23'
    set label 2 sprintf("pool\n(%d tokens a block)", bs) at 1.6, -1.2 center font ',23'
    set label 3 sprintf("prompt %d's\ntable", second) at 2.75, -1.2 center font ',23'
    # physical blocks: the first prompt's 0 .. n1-1, the copy n1, then the second's own
    do for [p = 0 : np - 1] {
        o = o + 1
        shared = p < nfull
        cow = part > 0 && p == n1
        set object o rect from 1.18, p - 0.38 to 2.02, p + 0.38 fc rgb (shared ? C_SHARED : cow ? C_COW : '#eeeeee') fs solid (shared || cow ? 0.35 : 1.0)
        set label 10 + p sprintf(shared ? '#%d  refs 2' : cow ? '#%d  copy of #%d' : '#%d', p, n1 - 1) at 1.6, p center font ',23'
    }
    # the tables: one box per logical block, an arrow to its physical block
    do for [i = 0 : n1 - 1] {
        o = o + 1
        held = i < nfull ? bs : part
        set object o rect from 0.1, i - 0.38 to 0.8, i + 0.38 fc rgb '#ffffff'
        set label 30 + i sprintf('%d: %d/%d', i, held, bs) at 0.45, i center font ',23'
        set arrow 30 + i from 0.8, i to 1.18, i lc rgb '#555555' lw 1.5 size screen 0.008,25
    }
    do for [i = 0 : n2 - 1] {
        o = o + 1
        held = i < n2 - 1 ? bs : (prefix + more) - (n2 - 1) * bs
        set object o rect from 2.4, i - 0.38 to 3.1, i + 0.38 fc rgb '#ffffff'
        set label 50 + i sprintf('%d: %d/%d', i, held, bs) at 2.75, i center font ',23'
        phys = i < nfull ? i : (part > 0 && i == n1 - 1) ? n1 : i + (part > 0 ? 1 : 0)
        set arrow 50 + i from 2.4, i to 2.02, phys + (phys == i ? 0 : 0.15) lc rgb (i < nfull ? C_SHARED : '#555555') lw (i < nfull ? 3 : 1.5) size screen 0.008,25
    }
    if (part > 0) {
        set arrow 90 from 1.08, n1 - 1 + 0.12 to 1.08, n1 - 0.05 lc rgb C_COW lw 3 dt 2 size screen 0.008,25 front
        set label 90 sprintf("copy on write: prompt %d's\ntoken %d goes into\na copy of block #%d", second, prefix + 1, n1 - 1) at 1.04, n1 + 0.9 right font ',23' textcolor rgb '#7a3b63'
    }
    plot NaN notitle
    unset multiplot
    set output
}
evaluate publish(out)
