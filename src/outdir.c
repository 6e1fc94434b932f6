/* outdir.c — atomic output folders. */
#include "outdir.h"

#include <errno.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int file_close(FILE *f) {
    if (!f) return 0;
    int bad = ferror(f);
    return (fclose(f) != 0 || bad) ? -1 : 0;
}

int path_join(char *out, size_t size, const char *dir, const char *name) {
    int n = snprintf(out, size, "%s/%s", dir, name);
    return (n < 0 || (size_t)n >= size) ? -1 : 0;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int remove_tree(const char *path) {
    return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int make_dirs(const char *path) {
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) return -1;
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
            buf[i] = c;
        }
    }
    struct stat st;
    return (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) ? 0 : -1;
}

static void parent_of(const char *path, char *out, size_t size) {
    snprintf(out, size, "%s", path);
    size_t n = strlen(out);
    while (n > 1 && out[n - 1] == '/') out[--n] = '\0'; /* "dir/" -> "dir" */
    char *slash = strrchr(out, '/');
    if (!slash) snprintf(out, size, ".");
    else if (slash == out) out[1] = '\0';
    else *slash = '\0';
}

int outdir_begin(OutDir *o, const char *target, char *err, size_t errsize) {
    struct stat st;
    char parent[4096];
    memset(o, 0, sizeof *o);
    if (!target[0] || strlen(target) + 16 >= sizeof o->target) {
        snprintf(err, errsize, "bad --out: %s", target);
        return -1;
    }
    snprintf(o->target, sizeof o->target, "%s", target);
    size_t n = strlen(o->target);
    while (n > 1 && o->target[n - 1] == '/') o->target[--n] = '\0';
    if (stat(o->target, &st) == 0 && !S_ISDIR(st.st_mode)) {
        snprintf(err, errsize, "--out is not a directory: %s", target);
        return -1;
    }
    parent_of(o->target, parent, sizeof parent);
    if (stat(parent, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errsize, "--out parent folder does not exist: %s", parent);
        return -1;
    }
    if (access(parent, W_OK | X_OK) != 0) {
        snprintf(err, errsize, "--out is not writable: %s", target);
        return -1;
    }
    snprintf(o->tmp, sizeof o->tmp, "%s.tmp.XXXXXX", o->target);
    if (!mkdtemp(o->tmp)) {
        snprintf(err, errsize, "cannot create a folder beside --out (%s): %s", strerror(errno), target);
        o->tmp[0] = '\0';
        return -1;
    }
    /* mkdtemp makes it 0700; give it the permissions mkdir would */
    mode_t mask = umask(0);
    umask(mask);
    chmod(o->tmp, 0777 & ~mask);
    return 0;
}

int outdir_commit(OutDir *o, char *err, size_t errsize) {
    char old[4200];
    struct stat st;
    int had_old = stat(o->target, &st) == 0;
    if (had_old) {
        snprintf(old, sizeof old, "%s.old.XXXXXX", o->target);
        if (!mkdtemp(old) || rename(o->target, old) != 0) {
            snprintf(err, errsize, "cannot move the old folder aside (%s): %s", strerror(errno), o->target);
            if (old[0]) rmdir(old);
            outdir_abort(o);
            return -1;
        }
    }
    if (rename(o->tmp, o->target) != 0) {
        snprintf(err, errsize, "cannot rename %s to %s: %s", o->tmp, o->target, strerror(errno));
        if (had_old) rename(old, o->target);
        outdir_abort(o);
        return -1;
    }
    o->tmp[0] = '\0';
    if (had_old) remove_tree(old);
    return 0;
}

void outdir_abort(OutDir *o) {
    if (o->tmp[0]) remove_tree(o->tmp);
    o->tmp[0] = '\0';
}
