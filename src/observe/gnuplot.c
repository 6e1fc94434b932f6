/* gnuplot.c — run a chart script through gnuplot (fork, exec, a pipe each way). */
#include "gnuplot.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "infile.h"

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

/* The folder of path ("." when it names none). */
static void folder_of(const char *path, char *out, size_t size) {
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(out, size, ".");
    else if (slash == path) snprintf(out, size, "/");
    else snprintf(out, size, "%.*s", (int)(slash - path), path);
}

/* 1 if the file at path mentions word (read whole, up to 1 MiB); 0 otherwise. */
static int mentions(const char *path, const char *word) {
    char *text, err[64];
    size_t n;
    if (infile_read(path, 1u << 20, &text, &n, err, sizeof err) != 0) return 0;
    int found = strstr(text, word) != NULL;
    free(text);
    return found;
}

int gnuplot_check_script(const char *script, char *err, size_t errsize) {
    char dir[4096], path[4200];
    folder_of(script, dir, sizeof dir);
    const char *files[] = {script, "style.gp", "publish.sh"};
    for (int i = 0; i < 3; i++) {
        struct stat st;
        if (i == 0) snprintf(path, sizeof path, "%s", script);
        else snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        /* the one before loads or runs it: missing, it would fail only after the work */
        char before[4200];
        if (i == 1) snprintf(before, sizeof before, "%s", script);
        else if (i == 2) snprintf(before, sizeof before, "%s/style.gp", dir);
        if (i > 0 && stat(path, &st) != 0 && errno == ENOENT) {
            if (!mentions(before, files[i])) continue;
            snprintf(err, errsize, "%s: missing (%s needs it)", path, before);
            return -1;
        }
        int fd = infile_open(path, NULL, err, errsize);
        if (fd < 0) return -1;
        close(fd);
    }
    return 0;
}

int gnuplot_wrote(const char *out, char *missing, size_t size) {
    static const char *const ext[] = {".png", ".svg"};
    for (int i = 0; i < 2; i++) {
        struct stat st;
        snprintf(missing, size, "%s%s", out, ext[i]);
        if (stat(missing, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) return 0;
    }
    missing[0] = '\0';
    return 1;
}

/* The time limit in seconds: $KVSCOPE_GNUPLOT_SECONDS when it is a number > 0, else
 * GNUPLOT_SECONDS. */
static double time_limit(void) {
    const char *e = getenv("KVSCOPE_GNUPLOT_SECONDS");
    char *end;
    double s = e ? strtod(e, &end) : 0.0;
    return e && end != e && *end == '\0' && s > 0.0 && s < 1e6 ? s : GNUPLOT_SECONDS;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Wait until fd has something to read or the deadline passes: 1 readable (or closed),
 * 0 past the deadline. */
static int wait_readable(int fd, double deadline) {
    for (;;) {
        double left = deadline - now();
        if (left <= 0) return 0;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, left > 1e6 ? 1000000000 : (int)(left * 1000.0) + 1);
        if (r > 0) return 1;
        if (r < 0 && errno != EINTR) return 1; /* let read() say what is wrong */
    }
}

/* Read fd to its end or the deadline, keeping the last non-empty line in msg. 0, or -1
 * when the deadline passed first. */
static int last_line_by(int fd, double deadline, char *msg, size_t size) {
    char buf[1024], line[512];
    size_t n = 0;
    ssize_t r;
    msg[0] = '\0';
    for (;;) {
        if (!wait_readable(fd, deadline)) return -1;
        r = read(fd, buf, sizeof buf);
        if (r == 0) break;
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) break;
        for (ssize_t i = 0; i < r; i++) {
            if (buf[i] == '\n' || buf[i] == '\r') {
                if (n) snprintf(msg, size, "%.*s", (int)n, line);
                n = 0;
            } else if (n + 1 < sizeof line && (n > 0 || (buf[i] != ' ' && buf[i] != '\t'))) {
                line[n++] = (unsigned char)buf[i] < 0x20 ? ' ' : buf[i]; /* without the indent */
            }
        }
    }
    if (n) snprintf(msg, size, "%.*s", (int)n, line);
    return 0;
}

int gnuplot_run(const char *script, const char *vars, char *msg, size_t size) {
    msg[0] = '\0';
    if (strpbrk(vars, "\n\r") || !gnuplot_quotable(script)) return -1;
    /* a gnuplot that exits early must not kill us with SIGPIPE: ignore it while writing */
    struct sigaction ign = {0}, old;
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    int in[2], er[2];
    if (pipe(in) != 0) return -1;
    if (pipe(er) != 0) {
        close(in[0]), close(in[1]);
        return -1;
    }
    const double limit = time_limit();
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) { /* the command line holds no user text: all of it goes through the pipe */
        setpgid(0, 0); /* its own group: a stop reaches what the script started too */
        dup2(in[0], 0);
        dup2(er[1], 2);
        close(in[0]), close(in[1]), close(er[0]), close(er[1]);
        execlp("gnuplot", "gnuplot", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(er[1]);
    if (pid < 0) {
        close(in[1]), close(er[0]);
        return -1;
    }
    setpgid(pid, pid); /* also here: whichever runs first */
    sigaction(SIGPIPE, &ign, &old);
    char text[13400], dir[4096];
    folder_of(script, dir, sizeof dir);
    int n = snprintf(text, sizeof text, "scripts='%s'\n%s\nload '%s'\n", dir, vars, script);
    int bad = n < 0 || (size_t)n >= sizeof text || write(in[1], text, (size_t)n) != n;
    close(in[1]);
    sigaction(SIGPIPE, &old, NULL);
    /* the script is all written: no deadlock on a full pipe */
    int late = last_line_by(er[0], now() + limit, msg, size) != 0;
    close(er[0]);
    if (late) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    if (late) {
        snprintf(msg, size, "still running after %g s, its time limit (a loop in the script?); "
                 "stopped", limit);
        return GNUPLOT_LATE;
    }
    if (bad) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
