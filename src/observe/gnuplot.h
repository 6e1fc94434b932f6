/* gnuplot.h — draw a chart by feeding one of the chart scripts (plots/NAME.gp) to gnuplot.
 *
 * A script takes its inputs and outputs as variables, as on the command line:
 *   gnuplot -e "in='data/compare/compare.csv'; out='plots/compare_flops'" plots/flops.gp
 * Nothing here prints: gnuplot's own messages are captured for the caller.
 */
#ifndef KVSCOPE_GNUPLOT_H
#define KVSCOPE_GNUPLOT_H

#include <stddef.h>

/* How to get gnuplot when it is missing. */
#define GNUPLOT_INSTALL_HINT "apt-get install gnuplot-nox"

/* 1 if an executable named gnuplot is on PATH, else 0. */
int gnuplot_found(void);

/* Before gnuplot starts (and before the command's work): script and what it reads
 * beside it (style.gp, which it loads, and publish.sh, which style.gp runs) must be
 * regular files, so that a FIFO cannot block gnuplot (infile.h); one of the two beside
 * it may be missing only when the file before it does not mention it (else "<path>:
 * missing (<script> needs it)"). 0, or -1 with "<path>: <problem>". */
int gnuplot_check_script(const char *script, char *err, size_t errsize);

/* Run script with the variables set by vars (gnuplot statements, e.g.
 * "in='a.csv'; out='b'"), and scripts set to the script's folder, where the script
 * finds style.gp (vars may set it otherwise). Returns gnuplot's exit status (0 ok), or
 * -1 when it could not be started or vars holds a newline, or GNUPLOT_LATE (below).
 * gnuplot's stderr is kept, not shown:
 * its last non-empty line (where gnuplot puts the error, after echoing the failing
 * command) goes to msg, "" when there is none. */
int gnuplot_run(const char *script, const char *vars, char *msg, size_t size);
/* gnuplot_run's time limit: a script still running after GNUPLOT_SECONDS (or
 * $KVSCOPE_GNUPLOT_SECONDS, a number > 0) is killed with all it started (its process
 * group), and gnuplot_run returns GNUPLOT_LATE with msg saying so. */
#define GNUPLOT_SECONDS 120.0
#define GNUPLOT_LATE (-2)

/* 1 if the chart out (a path without extension) was written: out.png and out.svg both
 * regular files that are not empty. Else 0, with the first one missing in missing (a
 * script can end without drawing: an empty one does). */
int gnuplot_wrote(const char *out, char *missing, size_t size);

/* 1 if s can go between single quotes in a gnuplot statement (no quote, no newline). */
int gnuplot_quotable(const char *s);

#endif
