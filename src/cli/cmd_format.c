/* cmd_format.c — `kvscope format`: numbers for people, in the files the lessons make.
 * A lesson script lays a table out and marks each number that a person reads, such as
 * {{digits 212705280}}; this command writes it the one way kvscope writes numbers for
 * people (numfmt.h): 212,705,280. The scripts never format a number themselves. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "infile.h"
#include "numfmt.h"
#include "outdir.h"

#define FORMAT_MAX (64u << 20) /* bytes of a file to format */

typedef struct {
    int unused;
} FormatArgs;

static const Option FORMAT_OPTIONS[] = {OPT_END};

static const Command FORMAT = {
    "format", "[FILE...]",
    "Write the numbers marked in text for people: {{digits N}} with thousands separated\n"
    "(1,234,567), {{bytes N}} in binary units with three digits (24.0 KiB, 1.00 GiB),\n"
    "{{kib N}} as the plain number N/1024 (6 for 6144). Each FILE is rewritten in place,\n"
    "whole or not at all, with its mode and owner (a symlink's target is rewritten, the\n"
    "link stays); without one, stdin goes to stdout. A marked value that is not a\n"
    "whole number >= 0 is refused, naming the file and the line (exit 2).\n",
    FORMAT_OPTIONS, NULL,
};

/* The marker at s ("{{digits 123}}"), written to out: 1 with *len its length; 0 when s
 * is no marker (written as it is); -1 when its value is bad. */
static int marker(const char *s, FILE *out, size_t *len) {
    static const char *const kinds[] = {"digits", "bytes", "kib"};
    for (int k = 0; k < 3; k++) {
        size_t n = strlen(kinds[k]);
        if (strncmp(s + 2, kinds[k], n) != 0 || s[2 + n] != ' ') continue;
        const char *v = s + 3 + n, *end = strstr(v, "}}");
        char num[32], buf[64];
        uint64_t x;
        if (!end || (size_t)(end - v) >= sizeof num) return -1;
        memcpy(num, v, (size_t)(end - v));
        num[end - v] = '\0';
        if (opts_u64(num, &x)) return -1;
        if (k == 0) fputs(group_digits(x, buf, sizeof buf), out);
        else if (k == 1) fputs(human_bytes((double)x, buf, sizeof buf), out);
        else fprintf(out, "%.6g", (double)x / 1024.0);
        *len = (size_t)(end + 2 - s);
        return 1;
    }
    return 0;
}

/* text (n bytes) to out with its markers written. 0, or the line of a bad marker. */
static int expand(const char *text, size_t n, FILE *out) {
    int line = 1;
    for (size_t i = 0; i < n;) {
        size_t len = 0;
        int m = text[i] == '{' && i + 1 < n && text[i + 1] == '{' ? marker(text + i, out, &len) : 0;
        if (m < 0) return line;
        if (m > 0) {
            i += len;
            continue;
        }
        line += text[i] == '\n';
        fputc(text[i++], out);
    }
    return 0;
}

/* stdin, whole, into a NUL-terminated buffer. */
static char *read_stdin(size_t *n) {
    size_t cap = 1 << 16;
    char *buf = malloc(cap);
    *n = 0;
    for (size_t r; buf && (r = fread(buf + *n, 1, cap - *n - 1, stdin)) > 0;) {
        *n += r;
        if (*n + 1 == cap) {
            char *b = *n < FORMAT_MAX ? realloc(buf, cap *= 2) : NULL;
            if (!b) free(buf);
            buf = b;
        }
    }
    if (buf) buf[*n] = '\0';
    return buf;
}

static int bad_marker(const char *where, int line) {
    char what[4300];
    snprintf(what, sizeof what, "%s:%d", where, line);
    return cli_fail("a marked number must be {{digits|bytes|kib N}} with N a whole number >= 0 at",
                    what);
}

/* The new file takes the old one's owner and mode (fchown first: it may clear the
 * set-id bits that fchmod then restores). 0, or -1 with errno. */
static int keep_owner_mode(FILE *out, const struct stat *st) {
    int fd = fileno(out);
    if (fd < 0 || fflush(out) != 0) return -1;
    if (fchown(fd, st->st_uid, st->st_gid) != 0) return -1;
    return fchmod(fd, st->st_mode & 07777);
}

/* One file, rewritten whole (AtomicFile) with its owner and mode; a symlink's target
 * is rewritten and the link stays. 0, or 2 after the error line. */
static int format_file(const char *path) {
    char *text, err[4600], real[PATH_MAX];
    size_t n;
    struct stat st;
    int rc = infile_read(path, FORMAT_MAX, &text, &n, err, sizeof err);
    if (rc == INFILE_NOMEM) return cli_fail("out of memory reading", path);
    if (rc) return cli_error(err);
    if (!realpath(path, real) || stat(real, &st) != 0) {
        free(text);
        fprintf(stderr, "kvscope: %s: cannot resolve the path (%s)\n", path, strerror(errno));
        return 2;
    }
    AtomicFile af;
    char left[4400];
    int nleft;
    atomic_clean_stale(real, left, sizeof left, &nleft); /* what killed runs left beside it */
    cli_note_left(left, nleft);
    FILE *out = atomic_open(&af, real, 1);
    if (!out) {
        free(text);
        fprintf(stderr, "kvscope: %s: cannot write beside it (%s)\n", path, strerror(errno));
        return 2;
    }
    int line = expand(text, n, out);
    free(text);
    if (line) {
        atomic_abort(&af, out);
        return bad_marker(path, line);
    }
    if (keep_owner_mode(out, &st) != 0) {
        int e = errno;
        atomic_abort(&af, out);
        fprintf(stderr, "kvscope: %s: cannot give the new file the old one's owner and mode (%s)\n",
                path, strerror(e));
        return 2;
    }
    if (atomic_commit(&af, out) == 0) return 0;
    fprintf(stderr, "kvscope: %s: cannot write (%s)\n", path, write_error_text(errno));
    return 2;
}

int cmd_format(int argc, char **argv) {
    if (argc > 0 && argv[0][0] == '-') { /* --help, or an option it does not have */
        FormatArgs a;
        int rc = opts_parse(&FORMAT, 1, argv, &a);
        return rc == OPTS_HELP ? 0 : rc;
    }
    if (argc == 0) {
        size_t n;
        char *text = read_stdin(&n);
        if (!text) return cli_fail("out of memory reading", "stdin");
        int line = expand(text, n, stdout);
        free(text);
        if (line) return bad_marker("stdin", line);
        return fflush(stdout) == 0 && !ferror(stdout) ? 0 : cli_fail("cannot write", "stdout");
    }
    for (int i = 0; i < argc; i++) {
        int rc = format_file(argv[i]);
        if (rc) return rc;
    }
    return 0;
}
