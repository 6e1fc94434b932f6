/* gnuplot.c — run a chart script through gnuplot (popen). */
#include "gnuplot.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int gnuplot_found(void) {
    const char *path = getenv("PATH");
    char dir[4096], exe[4200];
    if (!path) return 0;
    while (*path) {
        size_t n = strcspn(path, ":");
        if (n < sizeof dir) {
            memcpy(dir, path, n);
            dir[n] = '\0';
            snprintf(exe, sizeof exe, "%s/gnuplot", n ? dir : ".");
            if (access(exe, X_OK) == 0) return 1;
        }
        path += n;
        if (*path == ':') path++;
    }
    return 0;
}

int gnuplot_quotable(const char *s) { return strpbrk(s, "'\n\r") == NULL; }

int gnuplot_run(const char *script, const char *vars) {
    if (strpbrk(vars, "\n\r") || !gnuplot_quotable(script)) return -1;
    /* the command line holds no user text: variables and script go through the pipe */
    /* a gnuplot that exits early must not kill us with SIGPIPE: ignore it while writing */
    struct sigaction ign = {0}, old;
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    if (sigaction(SIGPIPE, &ign, &old) != 0) return -1;
    FILE *p = popen("gnuplot", "w");
    if (!p) {
        sigaction(SIGPIPE, &old, NULL);
        return -1;
    }
    int bad = fprintf(p, "%s\nload '%s'\n", vars, script) < 0 || fflush(p) != 0;
    int st = pclose(p);
    sigaction(SIGPIPE, &old, NULL);
    if (st == -1 || bad) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
