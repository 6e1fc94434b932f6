/* outdir.c — output folders and files that never lose a user's files (see outdir.h). */
#define _GNU_SOURCE /* renameat2 through syscall(), RENAME_EXCHANGE */
#include "outdir.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "infile.h"
#include "outfolder.h"
#include "rmtree.h"

#if defined(__linux__) && !defined(RENAME_EXCHANGE)
#define RENAME_EXCHANGE (1 << 1)
#endif

/* ---- small file and path helpers ------------------------------------------- */

int file_close(FILE *f) {
    if (!f) return 0;
    int bad = ferror(f), e = 0;
    if (fflush(f) != 0) bad = 1, e = errno; /* a full disk fails again here, with its errno */
    if (fclose(f) != 0) {
        if (!e) e = errno;
        bad = 1;
    }
    if (bad) errno = e;
    return bad ? -1 : 0;
}

const char *write_error_text(int err) {
    switch (err) {
    case ENOSPC: case EDQUOT: case EFBIG: case EIO: case EROFS: case EACCES: case EPERM:
    case ENAMETOOLONG: case ENOENT: case ENOTDIR: case EPIPE:
        return strerror(err);
    case EBADF:
        return "it is closed, or not open for writing";
    default:
        return "write error (disk full?)";
    }
}

int path_join(char *out, size_t size, const char *dir, const char *name) {
    int n = snprintf(out, size, "%s/%s", dir, name);
    return (n < 0 || (size_t)n >= size) ? -1 : 0;
}

/* Append component c (not "" or ".") to the absolute path p, applying "..". */
static int push_component(char *p, size_t size, const char *c, size_t n) {
    if (n == 2 && c[0] == '.' && c[1] == '.') {
        char *s = strrchr(p, '/');
        if (s == p) p[1] = '\0';
        else if (s) *s = '\0';
        return 0;
    }
    size_t len = strlen(p);
    int slash = !(len == 1 && p[0] == '/');
    if (len + slash + n + 1 > size) return -1;
    if (slash) p[len++] = '/';
    memcpy(p + len, c, n);
    p[len + n] = '\0';
    return 0;
}

int path_resolve(const char *path, char *out, size_t size) {
    char abs[2 * PATH_MAX], real[PATH_MAX];
    if (!path[0] || size < 2) return -1;
    if (path[0] == '/') {
        if (strlen(path) >= sizeof abs) return -1;
        snprintf(abs, sizeof abs, "%s", path);
    } else {
        if (!getcwd(abs, PATH_MAX)) return -1;
        size_t n = strlen(abs);
        if (n + 1 + strlen(path) >= sizeof abs) return -1;
        snprintf(abs + n, sizeof abs - n, "/%s", path);
    }
    /* the longest prefix (at a component boundary) that realpath resolves */
    size_t cut = strlen(abs);
    for (;;) {
        char c = abs[cut];
        abs[cut] = '\0';
        int ok = realpath(cut ? abs : "/", real) != NULL;
        abs[cut] = c;
        if (ok) break;
        if (cut == 0) return -1;
        while (cut > 0 && abs[cut - 1] != '/') cut--;
        while (cut > 0 && abs[cut - 1] == '/') cut--;
    }
    if (strlen(real) >= size) return -1;
    snprintf(out, size, "%s", real);
    /* the rest does not exist: no symlink in it, so "." and ".." go by spelling */
    for (const char *s = abs + cut; *s;) {
        while (*s == '/') s++;
        size_t n = strcspn(s, "/");
        if (n == 0) break;
        if (!(n == 1 && s[0] == '.') && push_component(out, size, s, n)) return -1;
        s += n;
    }
    return 0;
}

/* 1 if a is b or one of b's ancestors (absolute, resolved paths). */
static int same_or_above(const char *a, const char *b) {
    size_t n = strlen(a);
    if (n == 1 && a[0] == '/') return 1;
    return strncmp(a, b, n) == 0 && (b[n] == '\0' || b[n] == '/');
}

int remove_tree(const char *path) { return rmtree_remove(path, NULL); }

/* Remove an output folder with its marker last: a removal cut short by kill -9 still
 * carries the marker, so the next run knows it may finish the job. 0 or -1. */
static int remove_output(const char *dir) { return rmtree_remove(dir, OUTDIR_MARKER); }

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
    char *slash = strrchr(out, '/');
    if (!slash) snprintf(out, size, ".");
    else if (slash == out) out[1] = '\0';
    else *slash = '\0';
}

/* The user's spelling without trailing slashes ("out/" → "out", "/" stays). */
static int copy_target(char *dst, size_t size, const char *src) {
    size_t n = strlen(src);
    if (n == 0 || n + 64 >= size) return -1;
    memcpy(dst, src, n + 1);
    while (n > 1 && dst[n - 1] == '/') dst[--n] = '\0';
    return 0;
}

/* ---- which folders may be replaced ----------------------------------------- */

static int folder_empty(const char *dir);

/* 1 if dir holds kvscope's marker (a regular file, not a link), or nothing at all. */
static int replaceable(const char *dir) {
    char m[4300];
    struct stat st;
    if (path_join(m, sizeof m, dir, OUTDIR_MARKER) == 0 && lstat(m, &st) == 0 && S_ISREG(st.st_mode))
        return 1;
    return folder_empty(dir);
}

/* 1 if dir can be read and holds nothing. */
static int folder_empty(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    int empty = 1;
    while (empty && (e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) empty = 0;
    closedir(d);
    return empty;
}

/* What real would replace of the home folder h (a path, may be NULL or ""), or NULL. */
static const char *home_at(const char *real, const char *h) {
    char home[PATH_MAX];
    if (!h || !h[0] || !realpath(h, home)) return NULL;
    if (strcmp(real, home) == 0) return "is your home folder";
    if (same_or_above(real, home)) return "holds your home folder";
    return NULL;
}

/* The home folder of the password database (getpwuid_r), which holds even when $HOME
 * is unset, empty or elsewhere: NULL when there is none. */
static const char *passwd_home(char *buf, size_t size) {
    struct passwd pw, *r = NULL;
    if (getpwuid_r(getuid(), &pw, buf, size, &r) != 0 || !r || !r->pw_dir) return NULL;
    return r->pw_dir;
}

/* The folders no output may be, even with --force: "/", the current folder and its
 * ancestors, the home folder ($HOME, and the password database's) and its ancestors.
 * NULL, or what real would replace. */
static const char *forbidden(const char *real) {
    char cwd[PATH_MAX], pwbuf[16384];
    if (strcmp(real, "/") == 0) return "is the root folder";
    if (getcwd(cwd, sizeof cwd)) {
        if (strcmp(real, cwd) == 0) return "is the current folder";
        if (same_or_above(real, cwd)) return "holds the current folder";
    }
    const char *why = home_at(real, getenv("HOME"));
    return why ? why : home_at(real, passwd_home(pwbuf, sizeof pwbuf));
}

/* The first existing folder at or above dir must be a folder we may write in. */
static int check_parent(const char *dir, int make_parents, const char *opt, const char *target,
                        char *err, size_t errsize) {
    char p[4096];
    struct stat st;
    snprintf(p, sizeof p, "%s", dir);
    while (make_parents && stat(p, &st) != 0 && errno == ENOENT && strcmp(p, "/") != 0) {
        char up[4096];
        parent_of(p, up, sizeof up);
        memcpy(p, up, strlen(up) + 1);
    }
    if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errsize, "%s: the folder it goes in %s: %s", opt,
                 stat(p, &st) != 0 ? "does not exist" : "is not a folder", target);
        return -1;
    }
    if (access(p, W_OK | X_OK) != 0) {
        snprintf(err, errsize, "%s: cannot write in the folder it goes in (%s): %s", opt,
                 strerror(errno), target);
        return -1;
    }
    return 0;
}

/* An existing output folder must not be a mount point (it could not be swapped) nor
 * hold one (its removal would reach another file system). 0, or -1 with err. */
static int check_mounts(const OutDir *o, char *err, size_t errsize) {
    char found[4096];
    if (rmtree_is_mount(o->real)) {
        snprintf(err, errsize, "%s is a mount point, which kvscope cannot replace as a whole "
                 "(choose a new folder inside it): %s", o->option, o->target);
        return -1;
    }
    if (rmtree_find_mount(o->real, found, sizeof found) == 1) {
        snprintf(err, errsize, "%s holds a mount point, which kvscope never removes (unmount it, "
                 "or choose another folder): %s/%s", o->option, o->target, found);
        return -1;
    }
    return 0;
}

/* 1 if command writes models (config.json + weights). */
static int writes_models(const char *command) {
    return strcmp(command, "train") == 0 || strcmp(command, "export") == 0;
}

/* What --force may not replace, whoever runs kvscope: a folder that is not the user's
 * (outfolder_not_users) or that holds files git tracks. 0, or -1 with err. */
static int force_allowed(const OutDir *o, char *err, size_t errsize) {
    char top[PATH_MAX];
    const char *why = outfolder_not_users(o->real);
    if (why) {
        snprintf(err, errsize, "%s %s; kvscope never replaces it, even with --force (choose a new "
                 "folder): %s", o->option, why, o->target);
        return -1;
    }
    if (outfolder_git_tracked(o->real, top, sizeof top)) {
        snprintf(err, errsize, "%s holds files that git tracks in the work tree %s; kvscope never "
                 "replaces it, even with --force (choose a new folder): %s", o->option, top, o->target);
        return -1;
    }
    return 0;
}

/* May o replace its existing folder (not a mount, checked before)? A model only by train
 * or export with --force (and one kvscope did not write only when it is the user's); an
 * empty folder always; a folder this command wrote (its marker names the command)
 * always; any other folder with --force, when it is the user's (force_allowed). 0, or
 * -1 with err. */
static int may_replace(const OutDir *o, char *err, size_t errsize) {
    char cmd[32], opt[32];
    const int force = (o->flags & OUTDIR_FORCE) != 0;
    const int ours = outfolder_marker(o->real, cmd, sizeof cmd, opt, sizeof opt);
    char inner[PATH_MAX];
    if (outfolder_holds_model(o->real, inner, sizeof inner)) {
        snprintf(err, errsize, "%s holds a model folder (config.json and its weights), which kvscope "
                 "never removes, even with --force (choose another folder): %s/%s", o->option,
                 o->target, inner);
        return -1;
    }
    if (outfolder_is_model(o->real)) {
        if (strcmp(o->option, "--grads-out") == 0) { /* gradients, not a model */
            snprintf(err, errsize, "%s holds a model (config.json and its weights), which a "
                     "gradient dump never replaces, even with --force; choose another folder: %s",
                     o->option, o->target);
            return -1;
        }
        if (!writes_models(o->command)) {
            snprintf(err, errsize, "%s holds a model (config.json and its weights), which only "
                     "train or export replace, and only with --force; choose another folder: %s",
                     o->option, o->target);
            return -1;
        }
        if (!force) {
            snprintf(err, errsize, "%s holds a model (config.json and its weights); add --force to "
                     "replace it with this one, or choose another folder: %s", o->option, o->target);
            return -1;
        }
        /* a model kvscope wrote (make model retrains data/model, which git tracks) */
        return ours && writes_models(cmd) ? 0 : force_allowed(o, err, errsize);
    }
    if ((ours && strcmp(cmd, o->command) == 0) || folder_empty(o->real)) return 0;
    if (force) return force_allowed(o, err, errsize);
    if (ours)
        snprintf(err, errsize, "%s is the %s folder of `kvscope %s`, not of `kvscope %s`; choose "
                 "another folder, or add --force to replace it: %s", o->option, opt, cmd, o->command,
                 o->target);
    else
        snprintf(err, errsize, "%s is a folder kvscope did not write (it has files but no %s); "
                 "choose another folder, or add --force to replace it: %s",
                 o->option, OUTDIR_MARKER, o->target);
    return -1;
}

static int check_dir(OutDir *o, char *err, size_t errsize) {
    const char *why = forbidden(o->real);
    if (why) {
        snprintf(err, errsize, "%s %s, which kvscope would replace as a whole (choose a new folder): %s",
                 o->option, why, o->target);
        return -1;
    }
    struct stat st, lst;
    if (lstat(o->target, &lst) == 0 && S_ISLNK(lst.st_mode) && stat(o->target, &st) != 0) {
        snprintf(err, errsize, "%s is a symlink to nothing: %s", o->option, o->target);
        return -1;
    }
    if (stat(o->real, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            snprintf(err, errsize, "%s is %s, not a folder: %s", o->option, infile_kind(st.st_mode),
                     o->target);
            return -1;
        }
        if (check_mounts(o, err, errsize) != 0 || may_replace(o, err, errsize) != 0) return -1;
    } else if (errno != ENOENT) {
        snprintf(err, errsize, "%s: %s: %s", o->option, strerror(errno), o->target);
        return -1;
    }
    char parent[4096];
    parent_of(o->real, parent, sizeof parent);
    return check_parent(parent, (o->flags & OUTDIR_PARENTS) != 0, o->option, o->target, err, errsize);
}

int outdir_check(OutDir *o, const char *target, const char *command, const char *option,
                 unsigned flags, char *err, size_t errsize) {
    memset(o, 0, sizeof *o);
    o->slot = -1;
    o->flags = flags;
    snprintf(o->option, sizeof o->option, "%s", option);
    snprintf(o->command, sizeof o->command, "%s", command);
    if (copy_target(o->target, sizeof o->target, target) != 0) {
        snprintf(err, errsize, "%s: %s: %.200s", option, target[0] ? "path too long" : "empty path",
                 target);
        return -1;
    }
    if (path_resolve(o->target, o->real, sizeof o->real - 64) != 0) {
        snprintf(err, errsize, "%s: cannot resolve the path: %s", option, o->target);
        return -1;
    }
    return check_dir(o, err, errsize);
}

int outdir_overlap(const OutDir *a, const OutDir *b) {
    return same_or_above(a->real, b->real) || same_or_above(b->real, a->real);
}

int outdir_holds(const OutDir *o, const char *path) { return path_inside(o->real, path); }

void outdir_shown(const OutDir *o, const char *msg, char *out, size_t size) {
    size_t k = 0, n = strlen(o->tmp);
    for (const char *s = msg; *s && k + 1 < size;) {
        if (n && strncmp(s, o->tmp, n) == 0) {
            k += (size_t)snprintf(out + k, size - k, "%s", o->target);
            if (k >= size) k = size - 1;
            s += n;
        } else {
            out[k++] = *s++;
        }
    }
    out[k] = '\0';
}

/* ---- what killed runs left beside a target --------------------------------- */

/* If name is base + ".tmp." or ".old." + pid + "." + 6 characters (mkdtemp's), the
 * pid (and *old = 1 for ".old."); else 0. */
static long sibling_pid(const char *name, const char *base, int *old) {
    size_t n = strlen(base);
    if (strncmp(name, base, n) != 0) return 0;
    name += n;
    if (strncmp(name, ".tmp.", 5) == 0) *old = 0;
    else if (strncmp(name, ".old.", 5) == 0) *old = 1;
    else return 0;
    name += 5;
    char *end;
    if (!isdigit((unsigned char)name[0])) return 0;
    long pid = strtol(name, &end, 10);
    if (pid <= 0 || *end != '.' || strlen(end + 1) != 6) return 0;
    return pid;
}

static int pid_alive(long pid) {
    if (pid == (long)getpid()) return 1;
    return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

/* A file kvscope may replace: empty, or its first bytes are header. */
static int file_is_ours(const char *path, const char *header) {
    char err[64], buf[128];
    size_t size, n = strlen(header);
    int fd = infile_open(path, &size, err, sizeof err);
    if (fd < 0) return 0;
    ssize_t r = n < sizeof buf ? read(fd, buf, n) : -1;
    close(fd);
    return size == 0 || (r == (ssize_t)n && memcmp(buf, header, n) == 0);
}

/* Move the user's entries of a folder a dead run left (carried there just before it
 * died) back into real, where they came from (when real is gone, they stay). 0 when
 * none is left in stale. */
static int rescue(const char *stale, const char *real) {
    OutNames u;
    char from[2 * PATH_MAX], to[2 * PATH_MAX], up[2 * PATH_MAX];
    struct stat st;
    if (outfolder_user_files(stale, &u) != 0) return -1;
    if (u.n && (lstat(real, &st) != 0 || !S_ISDIR(st.st_mode))) {
        outfolder_names_free(&u);
        return -1;
    }
    int left = 0;
    for (int i = 0; i < u.n; i++) {
        snprintf(from, sizeof from, "%s/%s", stale, u.v[i]);
        snprintf(to, sizeof to, "%s/%s", real, u.v[i]);
        parent_of(to, up, sizeof up);
        if (lstat(to, &st) == 0 || make_dirs(up) != 0 || rename(from, to) != 0) left++;
    }
    outfolder_names_free(&u);
    return left ? -1 : 0;
}

/* Note a leftover that stays (the first one, and how many) in left. */
static void note_left(char *left, size_t size, int *n, const char *path, const char *why) {
    if (left && (*n)++ == 0) snprintf(left, size, "%.4000s (%.300s)", path, why);
}

/* Remove the siblings of real that dead kvscope runs left (folders when header is
 * NULL, else files starting with header); restore TARGET from a .old one when a kill
 * came between the two renames of a commit (first, so that files of the user's carried
 * into a .tmp one can go back). What cannot be removed stays, named in left (may be
 * NULL) with *nleft counting them. */
static void clean_stale(const char *real, const char *header, char *left, size_t size, int *nleft) {
    char parent[4096], path[4400];
    parent_of(real, parent, sizeof parent);
    const char *base = strrchr(real, '/') + 1;
    for (int pass = 0; pass < 2; pass++) {
        DIR *d = opendir(parent);
        if (!d) return;
        struct dirent *e;
        while ((e = readdir(d))) {
            int old;
            long pid = sibling_pid(e->d_name, base, &old);
            struct stat st;
            if (!pid || pid_alive(pid) || path_join(path, sizeof path, parent, e->d_name) ||
                lstat(path, &st) != 0)
                continue;
            char mnt[16];
            if (!header && S_ISDIR(st.st_mode) && replaceable(path) &&
                rmtree_find_mount(path, mnt, sizeof mnt) == 0) { /* a mount inside stays, whole */
                if (pass == 0) {
                    if (old && access(real, F_OK) != 0) rename(path, real);
                    continue;
                }
                if (rescue(path, real) != 0)
                    note_left(left, size, nleft, path, "it holds files kvscope did not write");
                else if (remove_output(path) != 0)
                    note_left(left, size, nleft, path, strerror(errno));
            } else if (pass == 1 && header && S_ISREG(st.st_mode) && file_is_ours(path, header)) {
                if (unlink(path) != 0) note_left(left, size, nleft, path, strerror(errno));
            }
        }
        closedir(d);
    }
}

/* ---- begin, commit, abort --------------------------------------------------- */

static int write_marker(const OutDir *o) {
    char path[4300];
    if (path_join(path, sizeof path, o->tmp, OUTDIR_MARKER) != 0) return -1;
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "kvscope %s %s\n\n"
               "kvscope wrote this folder (the %s folder of `kvscope %s`). When that command\n"
               "writes here again, it replaces the entries listed below and keeps every other\n"
               "file (yours) in the new folder. Another command replaces this folder only with\n"
               "--force, and never one that holds a model (config.json and its weights).\n",
            o->command, o->option, o->option, o->command);
    return file_close(f);
}

int outdir_begin(OutDir *o, char *err, size_t errsize) {
    o->tmp[0] = '\0';
    if (check_dir(o, err, errsize) != 0) return -1;
    char parent[4096];
    parent_of(o->real, parent, sizeof parent);
    if ((o->flags & OUTDIR_PARENTS) && make_dirs(parent) != 0) {
        snprintf(err, errsize, "%s: cannot create the folder it goes in (%s): %s", o->option,
                 strerror(errno), o->target);
        return -1;
    }
    o->nleft = 0;
    clean_stale(o->real, NULL, o->left, sizeof o->left, &o->nleft);
    snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld.XXXXXX", o->real, (long)getpid());
    cleanup_hold(); /* a signal between mkdtemp and the listing would leave the folder */
    char *made = mkdtemp(o->tmp);
    int e = errno;
    if (made) o->slot = cleanup_add(o->tmp);
    cleanup_release();
    if (!made) {
        snprintf(err, errsize, "%s: cannot create a folder beside it (%s): %s", o->option,
                 strerror(e), o->target);
        o->tmp[0] = '\0';
        return -1;
    }
    /* mkdtemp makes it 0700; give it the permissions mkdir would */
    mode_t mask = umask(0);
    umask(mask);
    chmod(o->tmp, 0777 & ~mask);
    int full = o->slot < 0;
    if (full || write_marker(o) != 0) {
        e = errno;
        outdir_abort(o);
        snprintf(err, errsize, "%s: cannot write in it (%s): %s", o->option,
                 full ? "too many output folders" : write_error_text(e), o->target);
        return -1;
    }
    return 0;
}

/* Swap the new folder in. *discard gets the path that now holds what must go (the
 * old folder), "" when there was none. 0, or -1 with errno (nothing changed). */
static int swap_in(OutDir *o, int exists, char *discard, size_t size) {
    discard[0] = '\0';
    if (!exists) return rename(o->tmp, o->real);
#ifdef SYS_renameat2
    if (!(o->flags & OUTDIR_NO_EXCHANGE) &&
        syscall(SYS_renameat2, AT_FDCWD, o->tmp, AT_FDCWD, o->real, RENAME_EXCHANGE) == 0) {
        snprintf(discard, size, "%s", o->tmp); /* the old folder, under the temporary name */
        return 0;
    }
    if (!(o->flags & OUTDIR_NO_EXCHANGE) && errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
        return -1;
#endif
    /* two renames: the old folder aside, the new one in; undone if the second fails */
    snprintf(discard, size, "%s.old.%ld.XXXXXX", o->real, (long)getpid());
    if (!mkdtemp(discard)) return -1;
    if (rename(o->real, discard) != 0) {
        int e = errno;
        rmdir(discard);
        errno = e;
        return -1;
    }
    if (rename(o->tmp, o->real) != 0) {
        int e = errno;
        rename(discard, o->real);
        errno = e;
        return -1;
    }
    return 0;
}

/* 1 if the target, as it is now, may be swapped out: a folder o may replace
 * (may_replace) that is no mount point and holds none. */
static int still_replaceable(const OutDir *o, const struct stat *st) {
    char mnt[16], err[8400];
    return S_ISDIR(st->st_mode) && may_replace(o, err, sizeof err) == 0 &&
           !rmtree_is_mount(o->real) && rmtree_find_mount(o->real, mnt, sizeof mnt) == 0;
}

/* The folders above the user's entry rel that the new folder lacks (a file of theirs in
 * heatmaps/, a run without heatmaps) are made to hold it: listed in the new marker as
 * kvscope's, so that they are looked into, not taken as the user's, at the next run. */
static void list_new_parents(const OutDir *o, const char *rel) {
    char path[2 * PATH_MAX], m[4300];
    struct stat st;
    FILE *f = NULL;
    for (const char *q = strchr(rel, '/'); q; q = strchr(q + 1, '/')) {
        snprintf(path, sizeof path, "%s/%.*s", o->tmp, (int)(q - rel), rel);
        if (lstat(path, &st) == 0) continue;
        if (!f && (path_join(m, sizeof m, o->tmp, OUTDIR_MARKER) != 0 || !(f = fopen(m, "a")))) return;
        fprintf(f, "%.*s/\n", (int)(q - rel), rel);
    }
    if (f) fclose(f);
}

/* Move the user's entries u of the old folder into the new one at the same paths (one
 * rename each: the same file system), or back when back is 1. 0; -1 with err naming the
 * entry when the new folder has one of that name or a rename fails (then every entry
 * moved is moved back, and the old folder is as it was). */
static int carry(OutDir *o, const OutNames *u, int back, char *err, size_t errsize) {
    char from[2 * PATH_MAX], to[2 * PATH_MAX], up[2 * PATH_MAX];
    struct stat st;
    for (int i = 0; !back && i < u->n; i++) {
        snprintf(to, sizeof to, "%s/%s", o->tmp, u->v[i]);
        if (lstat(to, &st) == 0) {
            snprintf(err, errsize, "%s holds %s, which kvscope did not write, and this run writes "
                     "one of that name; move yours away and run again (nothing replaced): %s",
                     o->option, u->v[i], o->target);
            return -1;
        }
    }
    for (int i = back ? u->n - 1 : 0; back ? i >= 0 : i < u->n; i += back ? -1 : 1) {
        snprintf(from, sizeof from, "%s/%s", o->real, u->v[i]);
        snprintf(to, sizeof to, "%s/%s", o->tmp, u->v[i]);
        parent_of(to, up, sizeof up);
        if (!back) list_new_parents(o, u->v[i]);
        if (back ? rename(to, from) == 0 : make_dirs(up) == 0 && rename(from, to) == 0) continue;
        if (back) continue; /* moving back: on with the others */
        int e = errno;
        snprintf(err, errsize, "%s: cannot keep %s, which kvscope did not write, in the new folder "
                 "(%s; nothing replaced): %s", o->option, u->v[i], strerror(e), o->target);
        OutNames done = {u->v, i, i};
        carry(o, &done, 1, NULL, 0);
        return -1;
    }
    return 0;
}

/* The names of the entries kept, for the caller's note. */
static void note_kept(OutDir *o, const OutNames *u) {
    size_t k = 0;
    o->kept[0] = '\0';
    o->nkept = u->n;
    for (int i = 0; i < u->n && k + 1 < sizeof o->kept; i++) {
        int w = snprintf(o->kept + k, sizeof o->kept - k, "%s%s", i ? ", " : "", u->v[i]);
        if (w < 0 || k + (size_t)w >= sizeof o->kept) {
            snprintf(o->kept + k, sizeof o->kept - k, "%s…", i ? ", " : "");
            break;
        }
        k += (size_t)w;
    }
}

/* Look at the target, then carry the user's files into the new folder and swap it in.
 * Another run may create the folder between the look and the rename (two runs racing
 * for a new --out; rename then fails as the folder is not empty): look again, and
 * replace its folder as any folder kvscope wrote. 0; -1 with errno; -2 when the target
 * is no longer a folder kvscope may replace; -3 with err when the user's files could not
 * be told or kept. */
static int swap_in_checked(OutDir *o, char *discard, size_t size, char *err, size_t errsize) {
    for (int tries = 0;; tries++) {
        struct stat st;
        OutNames u = {0};
        int exists = lstat(o->real, &st) == 0;
        if (exists && !still_replaceable(o, &st)) return -2;
        if (exists && outfolder_user_files(o->real, &u) != 0) {
            snprintf(err, errsize, "%s: cannot tell your files from kvscope's (its %s cannot be "
                     "read; nothing replaced): %s", o->option, OUTDIR_MARKER, o->target);
            return -3;
        }
        cleanup_hold(); /* a signal now waits until the folders are where they belong */
        int rc = carry(o, &u, 0, err, errsize) ? -3 : 0, e = 0;
        if (rc == 0) {
            rc = swap_in(o, exists, discard, size), e = errno;
            if (rc != 0) carry(o, &u, 1, NULL, 0);
        }
        if (rc == 0 && discard[0]) cleanup_move(o->slot, discard);
        else if (rc == 0) cleanup_drop(o->slot);
        cleanup_release();
        if (rc == 0) note_kept(o, &u);
        outfolder_names_free(&u);
        if (rc == 0 || rc == -3 || exists || (e != ENOTEMPTY && e != EEXIST) || tries >= 16) {
            errno = e;
            return rc;
        }
    }
}

int outdir_commit(OutDir *o, char *err, size_t errsize) {
    char discard[4300];
    o->nleft = 0; /* begin's were named then */
    if (outfolder_note_written(o->tmp) != 0) {
        snprintf(err, errsize, "%s: cannot write in it (%s): %s", o->option, write_error_text(errno),
                 o->target);
        outdir_abort(o);
        return -1;
    }
    int rc = swap_in_checked(o, discard, sizeof discard, err, errsize);
    int e = errno;
    if (rc == -2) {
        snprintf(err, errsize, "%s changed during the run and is no longer a folder kvscope wrote; "
                 "nothing written: %s", o->option, o->target);
    } else if (rc == -1) {
        snprintf(err, errsize, "%s: cannot replace the folder (%s): %s", o->option, strerror(e),
                 o->target);
    }
    if (rc != 0) {
        outdir_abort(o);
        return -1;
    }
    o->tmp[0] = '\0';
    if (discard[0] && remove_output(discard) != 0) /* the old folder, swapped out: named */
        note_left(o->left, sizeof o->left, &o->nleft, discard, strerror(errno));
    cleanup_drop(o->slot);
    o->slot = -1;
    return 0;
}

void outdir_abort(OutDir *o) {
    if (o->tmp[0]) remove_output(o->tmp);
    o->tmp[0] = '\0';
    cleanup_drop(o->slot);
    o->slot = -1;
}

/* ---- the files of a folder, and one file at a time ----------------------------- */

FILE *outdir_fopen(const OutDir *o, const char *name, char *err, size_t errsize) {
    char path[4400];
    FILE *f = NULL;
    if (path_join(path, sizeof path, o->tmp, name) != 0) errno = ENAMETOOLONG;
    else f = fopen(path, "w");
    if (!f) {
        int e = errno;
        snprintf(err, errsize, "%s: cannot write %s (%s): %s", o->option, name, write_error_text(e),
                 o->target);
        errno = e;
    }
    return f;
}

FILE *atomic_open(AtomicFile *a, const char *path, int listed) {
    memset(a, 0, sizeof *a);
    a->slot = -1;
    if (snprintf(a->path, sizeof a->path, "%s", path) >= (int)sizeof a->path ||
        snprintf(a->tmp, sizeof a->tmp, "%s.tmp.%ld.XXXXXX", path, (long)getpid()) >=
            (int)sizeof a->tmp) {
        a->tmp[0] = '\0';
        errno = ENAMETOOLONG;
        return NULL;
    }
    if (listed) cleanup_hold(); /* a signal between mkstemp and the list would leave it */
    int fd = mkstemp(a->tmp), e = errno;
    if (fd >= 0 && listed && (a->slot = cleanup_add(a->tmp)) < 0) e = EMFILE;
    if (listed) cleanup_release();
    if (fd < 0) {
        a->tmp[0] = '\0';
        errno = e;
        return NULL;
    }
    mode_t mask = umask(0); /* mkstemp's 0600 is not what the user expects */
    umask(mask);
    FILE *fp = (!listed || a->slot >= 0) && fchmod(fd, 0666 & ~mask) == 0 ? fdopen(fd, "wb") : NULL;
    if (!fp) {
        if (!listed || a->slot >= 0) e = errno;
        close(fd);
        atomic_abort(a, NULL);
        errno = e;
    }
    return fp;
}

int atomic_close(AtomicFile *a, FILE *fp) {
    if (file_close(fp) == 0) return 0;
    int e = errno;
    atomic_abort(a, NULL);
    errno = e;
    return -1;
}

int atomic_rename(AtomicFile *a) {
    cleanup_hold();
    int rc = rename(a->tmp, a->path), e = errno;
    if (rc == 0) {
        cleanup_drop(a->slot);
        a->slot = -1;
        a->tmp[0] = '\0';
    }
    cleanup_release();
    if (rc == 0) return 0;
    atomic_abort(a, NULL);
    errno = e;
    return -1;
}

int atomic_commit(AtomicFile *a, FILE *fp) { return atomic_close(a, fp) ? -1 : atomic_rename(a); }

void atomic_abort(AtomicFile *a, FILE *fp) {
    if (fp) fclose(fp);
    if (a->tmp[0]) unlink(a->tmp);
    a->tmp[0] = '\0';
    cleanup_drop(a->slot);
    a->slot = -1;
}

/* ---- one output file --------------------------------------------------------- */

static int file_has_header(const char *path, const char *header);
static int check_own_file(const OutFile *f, char *err, size_t errsize);

static int check_file(OutFile *f, char *err, size_t errsize) {
    struct stat st, lst;
    if (lstat(f->target, &lst) == 0 && S_ISLNK(lst.st_mode) && stat(f->target, &st) != 0) {
        snprintf(err, errsize, "%s is a symlink to nothing: %s", f->option, f->target);
        return -1;
    }
    if (stat(f->real, &st) == 0) {
        if (!S_ISREG(st.st_mode)) {
            snprintf(err, errsize, "%s is %s, not a file kvscope can replace, even with --force "
                     "(choose another path): %s", f->option, infile_kind(st.st_mode), f->target);
            return -1;
        }
        char parent[4096];
        parent_of(f->real, parent, sizeof parent);
        if (outfolder_is_model(parent)) {
            snprintf(err, errsize, "%s is a file of a model folder (config.json and its weights), "
                     "which kvscope never replaces, even with --force (choose another path): %s",
                     f->option, f->target);
            return -1;
        }
        if (f->flags & OUTFILE_OURS_ONLY) return check_own_file(f, err, errsize);
        if (!(f->flags & OUTDIR_FORCE) && !file_is_ours(f->real, f->header)) {
            snprintf(err, errsize, "%s is a file kvscope did not write (it does not start with \"%.*s\"); "
                     "choose another file, or add --force to replace it: %s", f->option,
                     (int)strcspn(f->header, "\n"), f->header, f->target);
            return -1;
        }
    } else if (errno != ENOENT) {
        snprintf(err, errsize, "%s: %s: %s", f->option, strerror(errno), f->target);
        return -1;
    }
    char parent[4096];
    parent_of(f->real, parent, sizeof parent);
    return check_parent(parent, 0, f->option, f->target, err, errsize);
}

int outfile_check(OutFile *f, const char *target, const char *option, const char *header,
                  unsigned flags, char *err, size_t errsize) {
    memset(f, 0, sizeof *f);
    f->file.slot = -1;
    f->flags = flags;
    snprintf(f->option, sizeof f->option, "%s", option);
    size_t n = strlen(target);
    if (n == 0 || n + 64 >= sizeof f->target || strlen(header) >= sizeof f->header) {
        snprintf(err, errsize, "%s: %s: %.200s", option, n ? "path too long" : "empty path", target);
        return -1;
    }
    memcpy(f->target, target, n + 1);
    memcpy(f->header, header, strlen(header) + 1);
    if (target[n - 1] == '/') { /* "newf/" means a folder: never write a file named newf */
        snprintf(err, errsize, "%s names a file, but ends with / as a folder does (give a file "
                 "name): %s", option, f->target);
        return -1;
    }
    if (path_resolve(f->target, f->real, sizeof f->real - 64) != 0) {
        snprintf(err, errsize, "%s: cannot resolve the path: %s", option, f->target);
        return -1;
    }
    return check_file(f, err, errsize);
}

FILE *outfile_begin(OutFile *f, char *err, size_t errsize) {
    if (check_file(f, err, errsize) != 0) return NULL;
    f->nleft = 0;
    clean_stale(f->real, f->header, f->left, sizeof f->left, &f->nleft);
    FILE *fp = atomic_open(&f->file, f->real, 1);
    if (!fp)
        snprintf(err, errsize, "%s: cannot create a file beside it (%s): %s", f->option,
                 strerror(errno), f->target);
    return fp;
}

int outfile_commit(OutFile *f, FILE *fp, char *err, size_t errsize) {
    if (atomic_close(&f->file, fp) != 0) {
        snprintf(err, errsize, "%s: cannot write (%s): %s", f->option, write_error_text(errno),
                 f->target);
        return -1;
    }
    struct stat st;
    const int strict = (f->flags & OUTFILE_OURS_ONLY) != 0;
    if ((strict || !(f->flags & OUTDIR_FORCE)) && stat(f->real, &st) == 0 &&
        (!S_ISREG(st.st_mode) || !(strict ? file_has_header(f->real, f->header)
                                          : file_is_ours(f->real, f->header)))) {
        snprintf(err, errsize, "%s changed during the run and is no longer a file kvscope wrote; "
                 "nothing written: %s", f->option, f->target);
        atomic_abort(&f->file, NULL);
        return -1;
    }
    if (atomic_rename(&f->file) != 0) {
        snprintf(err, errsize, "%s: cannot replace the file (%s): %s", f->option, strerror(errno),
                 f->target);
        return -1;
    }
    return 0;
}

void outfile_abort(OutFile *f, FILE *fp) { atomic_abort(&f->file, fp); }

/* ---- files kvscope replaces only when it wrote them, and inputs ------------------ */

/* 1 if path is a regular file whose first bytes are header (an empty file is not). */
static int file_has_header(const char *path, const char *header) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
           file_is_ours(path, header);
}

/* OUTFILE_OURS_ONLY, for an existing regular file: only one that starts with the header,
 * named directly (a symlink is refused: the link would be lost or its target written
 * through), whatever --force says. */
static int check_own_file(const OutFile *f, char *err, size_t errsize) {
    const int hl = (int)strcspn(f->header, "\n");
    struct stat lst;
    if (lstat(f->target, &lst) != 0) {
        snprintf(err, errsize, "%s: %s: %s", f->option, strerror(errno), f->target);
        return -1;
    }
    if (S_ISLNK(lst.st_mode)) {
        snprintf(err, errsize, "%s is a symlink; kvscope writes only a file of its own there, even "
                 "with --force (choose another file): %s", f->option, f->target);
        return -1;
    }
    if (!file_has_header(f->real, f->header)) {
        snprintf(err, errsize, "%s is a file kvscope did not write (it does not start with \"%.*s\"), "
                 "and kvscope replaces it with nothing of its own, even with --force; choose another "
                 "file, or move this one away: %s", f->option, hl, f->header, f->target);
        return -1;
    }
    char parent[4096];
    parent_of(f->real, parent, sizeof parent);
    return check_parent(parent, 0, f->option, f->target, err, errsize);
}

void atomic_clean_stale(const char *path, char *left, size_t size, int *nleft) {
    char real[PATH_MAX];
    *nleft = 0;
    if (path_resolve(path, real, sizeof real) == 0) clean_stale(real, "", left, size, nleft);
}

void outfile_clean_stale(OutFile *f) {
    f->nleft = 0;
    clean_stale(f->real, f->header, f->left, sizeof f->left, &f->nleft);
}

int outfile_remove(const OutFile *f) {
    struct stat lst;
    if (lstat(f->target, &lst) != 0) return errno == ENOENT ? 0 : -1;
    if (!S_ISREG(lst.st_mode) || !file_has_header(f->real, f->header)) return -1;
    return unlink(f->real);
}

/* The folders of a resolved path, itself first, by stat: 1 when one is (dev, ino). */
static int path_passes(const char *real, dev_t dev, ino_t ino) {
    char p[PATH_MAX];
    struct stat st;
    if (strlen(real) >= sizeof p) return 0;
    memcpy(p, real, strlen(real) + 1);
    for (;;) {
        if (stat(p, &st) == 0 && st.st_dev == dev && st.st_ino == ino) return 1;
        char *s = strrchr(p, '/');
        if (!s || (s == p && p[1] == '\0')) return 0;
        if (s == p) p[1] = '\0';
        else *s = '\0';
    }
}

int path_same(const char *a, const char *b) {
    char ra[PATH_MAX], rb[PATH_MAX];
    struct stat sa, sb;
    if (path_resolve(a, ra, sizeof ra) == 0 && path_resolve(b, rb, sizeof rb) == 0 &&
        strcmp(ra, rb) == 0)
        return 1;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int path_inside(const char *dir, const char *path) {
    char rd[PATH_MAX], rp[PATH_MAX];
    struct stat sd;
    if (path_resolve(path, rp, sizeof rp) != 0) return 0;
    if (path_resolve(dir, rd, sizeof rd) == 0 && same_or_above(rd, rp)) return 1;
    return stat(dir, &sd) == 0 && S_ISDIR(sd.st_mode) && path_passes(rp, sd.st_dev, sd.st_ino);
}
