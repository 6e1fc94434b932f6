/* infile.c — see infile.h. */
#include "infile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *message_one_line(char *s) {
    for (char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    return s;
}

const char *infile_kind(unsigned mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISREG(mode)) return "a regular file";
    return "not a regular file";
}

int infile_open(const char *path, size_t *size, char *err, size_t errsize) {
    struct stat sb;
    /* refused before open(): opening some devices does something (a tape rewinds, a
     * watchdog starts) */
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        snprintf(err, errsize, "%s: is %s, not a regular file", path, infile_kind(sb.st_mode));
        return INFILE_BAD;
    }
    /* O_NONBLOCK: should it have become a FIFO since, open() returns at once instead of
     * waiting for a writer; fstat then sees what was opened */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        snprintf(err, errsize, "%s: cannot open: %s", path, strerror(errno));
        return INFILE_BAD;
    }
    if (fstat(fd, &sb) != 0) {
        snprintf(err, errsize, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return INFILE_BAD;
    }
    if (!S_ISREG(sb.st_mode)) {
        snprintf(err, errsize, "%s: is %s, not a regular file", path, infile_kind(sb.st_mode));
        close(fd);
        return INFILE_BAD;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        snprintf(err, errsize, "%s: cannot open: %s", path, strerror(errno));
        close(fd);
        return INFILE_BAD;
    }
    if (size) *size = (size_t)sb.st_size;
    return fd;
}

/* "16 MiB", "512 KiB" or "100 bytes", for the size-limit message. */
static void limit_text(size_t limit, char *buf, size_t size) {
    if (limit >= (1u << 20) && limit % (1u << 20) == 0) snprintf(buf, size, "%zu MiB", limit >> 20);
    else if (limit >= 1024 && limit % 1024 == 0) snprintf(buf, size, "%zu KiB", limit >> 10);
    else snprintf(buf, size, "%zu bytes", limit);
}

int infile_read(const char *path, size_t limit, char **buf, size_t *len, char *err, size_t errsize) {
    size_t claimed;
    *buf = NULL;
    *len = 0;
    int fd = infile_open(path, &claimed, err, errsize);
    if (fd < 0) return fd;
    char lim[32];
    limit_text(limit, lim, sizeof lim);
    if (claimed > limit) {
        snprintf(err, errsize, "%s: larger than the limit of %s", path, lim);
        close(fd);
        return INFILE_BAD;
    }
    /* the claimed size is a hint: read until EOF, but never past limit + 1 bytes */
    size_t cap = claimed < 4096 ? 4096 : claimed + 1, n = 0;
    if (cap > limit + 1) cap = limit + 1;
    char *b = malloc(cap + 1);
    int rc = b ? 0 : INFILE_NOMEM;
    while (rc == 0) {
        if (n == cap) {
            if (cap > limit) {
                snprintf(err, errsize, "%s: larger than the limit of %s", path, lim);
                rc = INFILE_BAD;
                break;
            }
            size_t nc = cap * 2 > limit + 1 ? limit + 1 : cap * 2;
            char *nb = realloc(b, nc + 1);
            if (!nb) {
                rc = INFILE_NOMEM;
                break;
            }
            b = nb;
            cap = nc;
        }
        ssize_t r = read(fd, b + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            snprintf(err, errsize, "%s: read error: %s", path, strerror(errno));
            rc = INFILE_BAD;
        }
        if (r <= 0) break;
        n += (size_t)r;
    }
    close(fd);
    if (rc) {
        free(b);
        return rc;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return 0;
}
