/* outfolder.c — what an existing folder is (see outfolder.h). */
#include "outfolder.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "infile.h"
#include "outdir.h"

int outfolder_marker(const char *dir, char *command, size_t csize, char *option, size_t osize) {
    char path[4300], line[128];
    struct stat st;
    command[0] = option[0] = '\0';
    if (path_join(path, sizeof path, dir, OUTDIR_MARKER) != 0 || lstat(path, &st) != 0 ||
        !S_ISREG(st.st_mode))
        return 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, line, sizeof line - 1);
    close(fd);
    if (n <= 0) return 0;
    line[n] = '\0';
    line[strcspn(line, "\n")] = '\0';
    char c[32], o[32], rest;
    if (sscanf(line, "kvscope %31s %31s %c", c, o, &rest) != 2 || o[0] != '-') return 0;
    snprintf(command, csize, "%s", c);
    snprintf(option, osize, "%s", o);
    return 1;
}

static int is_file(const char *dir, const char *name) {
    char p[4300];
    struct stat st;
    return path_join(p, sizeof p, dir, name) == 0 && stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* 1 if name ends with one of the extensions model weights are saved with (any case). */
static int weights_name(const char *name) {
    static const char *const ext[] = {".safetensors", ".bin", ".pt", ".pth", ".gguf", ".h5",
                                      ".msgpack", ".ckpt"};
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
        size_t k = strlen(ext[i]);
        if (n > k && strcasecmp(name + n - k, ext[i]) == 0) return 1;
    }
    return 0;
}

int outfolder_is_model(const char *dir) {
    if (!is_file(dir, "config.json")) return 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(d));)
        found = weights_name(e->d_name) && is_file(dir, e->d_name);
    closedir(d);
    return found;
}

/* 1 if a model folder lies below dir (not dir itself), at most 16 levels down, not
 * through symlinks, with its path below dir in found. */
static int model_below(const char *dir, const char *rel, char *found, size_t size, int depth) {
    char path[PATH_MAX], sub[PATH_MAX];
    if (depth > 16 || snprintf(path, sizeof path, "%s%s%s", dir, rel[0] ? "/" : "", rel) >= (int)sizeof path)
        return 0;
    DIR *d = opendir(path);
    if (!d) return 0;
    int hit = 0;
    for (struct dirent *e; !hit && (e = readdir(d));) {
        struct stat st;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
            snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name) >= (int)sizeof sub ||
            snprintf(path, sizeof path, "%s/%s", dir, sub) >= (int)sizeof path ||
            lstat(path, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        if (outfolder_is_model(path)) {
            snprintf(found, size, "%s", sub);
            hit = 1;
        } else {
            hit = model_below(dir, sub, found, size, depth + 1);
        }
    }
    closedir(d);
    return hit;
}

int outfolder_holds_model(const char *dir, char *found, size_t size) {
    return model_below(dir, "", found, size, 0);
}

/* 1 if real lies strictly inside the folder base (a path, resolved here). "/" as
 * base counts for nothing: everything lies inside it. */
static int strictly_inside(const char *real, const char *base) {
    char b[PATH_MAX];
    if (!base || !base[0] || !realpath(base, b) || strcmp(b, "/") == 0) return 0;
    size_t n = strlen(b);
    return strncmp(real, b, n) == 0 && real[n] == '/' && real[n + 1] != '\0';
}

const char *outfolder_not_users(const char *real) {
    char cwd[PATH_MAX], pwbuf[16384], rhome[PATH_MAX], rtmp[PATH_MAX];
    struct passwd pw, *r = NULL;
    /* the home of the password database: $HOME can say anything */
    const char *pwhome = getpwuid_r(getuid(), &pw, pwbuf, sizeof pwbuf, &r) == 0 && r ? r->pw_dir : NULL;
    const char *here = getcwd(cwd, sizeof cwd);
    /* the current folder counts only when it is itself the user's (cd /etc gives nothing) */
    int here_users = here && ((pwhome && realpath(pwhome, rhome) && strcmp(rhome, "/") != 0 &&
                               (strcmp(here, rhome) == 0 || strictly_inside(here, pwhome))) ||
                              (realpath("/tmp", rtmp) && (strcmp(here, rtmp) == 0 ||
                                                          strictly_inside(here, "/tmp"))));
    if (!strictly_inside(real, pwhome) && !(here_users && strictly_inside(real, here)) &&
        !strictly_inside(real, "/tmp"))
        return "is a system folder (not under your home, the current folder or /tmp)";
    struct stat st;
    if (lstat(real, &st) == 0 && st.st_uid != geteuid()) return "belongs to another user";
    return NULL;
}

/* The top of the git work tree real lies in (the nearest folder above it holding
 * .git): 1 with top and the path of real below it in rel; 0 when there is none. */
static int work_tree(const char *real, char *top, size_t size, const char **rel) {
    char p[PATH_MAX], g[PATH_MAX + 8];
    if (strlen(real) >= sizeof p) return 0;
    snprintf(p, sizeof p, "%s", real);
    for (char *s; (s = strrchr(p, '/')) != NULL;) {
        if (s == p) return 0; /* "/" itself is no work tree of a user */
        *s = '\0';
        struct stat st;
        snprintf(g, sizeof g, "%s/.git", p);
        if (lstat(g, &st) == 0) {
            snprintf(top, size, "%s", p);
            *rel = real + strlen(p) + 1;
            return 1;
        }
    }
    return 0;
}

int outfolder_git_tracked(const char *real, char *top, size_t size) {
    const char *rel;
    if (!work_tree(real, top, size, &rel)) return 0;
    int out[2];
    if (pipe(out) != 0) return 1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0), dup2(out[1], 1), dup2(null, 2);
        close(out[0]), close(out[1]);
        unsetenv("GIT_DIR"), unsetenv("GIT_WORK_TREE"), unsetenv("GIT_INDEX_FILE");
        if (chdir(top) == 0) execlp("git", "git", "ls-files", "-z", "--", rel, (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    char c;
    ssize_t n = 0;
    if (pid > 0)
        while ((n = read(out[0], &c, 1)) < 0 && errno == EINTR) continue;
    close(out[0]);
    int st = 0;
    if (pid > 0)
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) continue;
    /* git said a name: tracked; git could not answer (absent, a refusal): assume so */
    if (pid < 0 || n > 0) return 1;
    return !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* ---- the entries a run wrote, and the user's --------------------------------------- */

#define LIST_HEAD "written:" /* the marker's line before the list of the run's entries */
#define LIST_LIMIT (64u << 20)

/* Names compare up to a tab: a list line is "name" or "name\tSIZE HASH". */
static int cmp_key(const char *a, const char *b) {
    for (;; a++, b++) {
        int ca = *a == '\t' ? 0 : (unsigned char)*a, cb = *b == '\t' ? 0 : (unsigned char)*b;
        if (ca != cb || !ca) return ca - cb;
    }
}

static int cmp_names(const void *a, const void *b) {
    return cmp_key(*(char *const *)a, *(char *const *)b);
}

/* "SIZE HASH" of a regular file: its size and a 64-bit hash of its bytes (FNV-1a over
 * 8-byte words), what tells the file a run wrote from one the user put in its place.
 * Content, not mtime: the marker stays the same run to run. 0 or -1. */
static int file_stamp(const char *path, char *out, size_t size) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return -1;
    unsigned long long h = 1469598103934665603ull, total = 0;
    unsigned char buf[1 << 16];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
        if (n < 0) continue;
        for (ssize_t i = 0; i < n; i++) h = (h ^ buf[i]) * 1099511628211ull;
        total += (unsigned long long)n;
    }
    close(fd);
    if (n < 0) return -1;
    snprintf(out, size, "%llu %016llx", total, h);
    return 0;
}

/* A file of measured times (timing.csv, train_timing.csv): its bytes differ run to run,
 * so the marker names it without a stamp (the marker stays the same bytes for the same
 * options, and a measured file goes by its name). */
static int measured(const char *name) {
    const size_t n = strlen(name), k = strlen("timing.csv");
    return n >= k && strcmp(name + n - k, "timing.csv") == 0;
}

/* Sort l's names (qsort must not see the NULL of an empty list). */
static void names_sort(OutNames *l) {
    if (l->n > 1) qsort(l->v, (size_t)l->n, sizeof *l->v, cmp_names);
}

/* Append rel to the list (grown as needed). 0 or -1. */
static int names_push(OutNames *l, const char *rel) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        char **v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) return -1;
        l->v = v, l->cap = cap;
    }
    return (l->v[l->n] = strdup(rel)) ? (l->n++, 0) : -1;
}

void outfolder_names_free(OutNames *l) {
    for (int i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* Every entry below dir/rel ("" for dir itself), folders as "name/" then their
 * entries, the marker at the top left out. 0 or -1. */
static int walk(const char *dir, const char *rel, OutNames *l, int depth) {
    char path[PATH_MAX], sub[PATH_MAX];
    if (depth > 32) return -1;
    if (snprintf(path, sizeof path, "%s%s%s", dir, rel[0] ? "/" : "", rel) >= (int)sizeof path) return -1;
    DIR *d = opendir(path);
    if (!d) return -1;
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || strpbrk(e->d_name, "\n\t") ||
            (!rel[0] && !strcmp(e->d_name, OUTDIR_MARKER)))
            continue;
        struct stat st;
        if (snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name) >= (int)sizeof sub ||
            snprintf(path, sizeof path, "%s/%s", dir, sub) >= (int)sizeof path || lstat(path, &st) != 0) {
            rc = -1;
            break;
        }
        char line[PATH_MAX + 64], stamp[48];
        if (S_ISDIR(st.st_mode)) {
            snprintf(line, sizeof line, "%s/", sub);
            rc = names_push(l, line) || walk(dir, sub, l, depth + 1);
        } else if (S_ISREG(st.st_mode) && !measured(e->d_name)) {
            rc = file_stamp(path, stamp, sizeof stamp);
            if (rc == 0) snprintf(line, sizeof line, "%s\t%s", sub, stamp);
            rc = rc || names_push(l, line);
        } else {
            rc = names_push(l, sub);
        }
    }
    closedir(d);
    return rc ? -1 : 0;
}

int outfolder_note_written(const char *dir) {
    OutNames l = {0};
    char path[4300];
    if (walk(dir, "", &l, 0) != 0 || path_join(path, sizeof path, dir, OUTDIR_MARKER) != 0) {
        outfolder_names_free(&l);
        return -1;
    }
    names_sort(&l);
    FILE *f = fopen(path, "a");
    if (f) {
        fprintf(f, "\n" LIST_HEAD "\n");
        for (int i = 0; i < l.n; i++) fprintf(f, "%s\n", l.v[i]);
    }
    outfolder_names_free(&l);
    return f ? file_close(f) : -1;
}

/* The list of dir's marker, sorted, into l: 1 when the marker has one, 0 when it has
 * none (a folder of an earlier kvscope) or there is no marker, -1 on error. */
static int read_list(const char *dir, OutNames *l) {
    char path[4300], err[64], *text;
    size_t n;
    memset(l, 0, sizeof *l);
    struct stat st;
    if (path_join(path, sizeof path, dir, OUTDIR_MARKER) != 0) return -1;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0; /* not kvscope's: no list */
    if (infile_read(path, LIST_LIMIT, &text, &n, err, sizeof err) != 0) return -1;
    char *s = strstr(text, "\n" LIST_HEAD "\n");
    int rc = s ? 1 : 0;
    for (char *p = s ? s + sizeof LIST_HEAD + 1 : NULL; p && *p && rc == 1;) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = '\0';
        if (*p && names_push(l, p) != 0) rc = -1;
        p = nl ? nl + 1 : NULL;
    }
    free(text);
    if (rc == 1) names_sort(l);
    if (rc < 0) outfolder_names_free(l);
    return rc;
}

/* The list's line for name, or NULL. */
static const char *listed(const OutNames *l, const char *name) {
    char **hit = l->n > 0 ? bsearch(&name, l->v, (size_t)l->n, sizeof *l->v, cmp_names) : NULL;
    return hit ? *hit : NULL;
}

/* 1 if the entry at path (lstat st), listed as line, is still what the run wrote: a
 * folder for "name/", and for a file line with a stamp, a regular file of that size and
 * hash (a line without one, of an earlier kvscope, goes by the name). */
static int as_written(const char *line, const char *path, const struct stat *st) {
    const char *tab = strchr(line, '\t');
    char stamp[48];
    if (!tab) return 1;
    return S_ISREG(st->st_mode) && file_stamp(path, stamp, sizeof stamp) == 0 && strcmp(stamp, tab + 1) == 0;
}


/* The entries below dir/rel that the list does not hold, into user; a listed folder is
 * looked into, an unlisted one is the user's whole. 0 or -1. */
static int unlisted(const char *dir, const char *rel, const OutNames *list, OutNames *user, int depth) {
    OutNames here = {0};
    char path[PATH_MAX];
    if (depth > 32 || snprintf(path, sizeof path, "%s%s%s", dir, rel[0] ? "/" : "", rel) >= (int)sizeof path)
        return -1;
    DIR *d = opendir(path);
    if (!d) return -1;
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
            (!rel[0] && !strcmp(e->d_name, OUTDIR_MARKER)))
            continue;
        char sub[PATH_MAX], slash[PATH_MAX + 1];
        struct stat st;
        if (snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name) >= (int)sizeof sub ||
            snprintf(path, sizeof path, "%s/%s", dir, sub) >= (int)sizeof path || lstat(path, &st) != 0) {
            rc = -1;
            break;
        }
        snprintf(slash, sizeof slash, "%s/", sub);
        const char *line = listed(list, sub);
        /* a folder where the run wrote a file, a file it did not write byte for byte: the user's */
        if (S_ISDIR(st.st_mode) && listed(list, slash)) rc = names_push(&here, sub);
        else if (S_ISDIR(st.st_mode) || !line || !as_written(line, path, &st)) rc = names_push(user, sub);
    }
    closedir(d);
    for (int i = 0; rc == 0 && i < here.n; i++) rc = unlisted(dir, here.v[i], list, user, depth + 1);
    outfolder_names_free(&here);
    return rc ? -1 : 0;
}

int outfolder_user_files(const char *dir, OutNames *user) {
    OutNames list;
    memset(user, 0, sizeof *user);
    int rc = read_list(dir, &list);
    if (rc == 1) {
        rc = unlisted(dir, "", &list, user, 0);
        if (rc == 0) names_sort(user);
        else outfolder_names_free(user);
    }
    outfolder_names_free(&list);
    return rc < 0 ? -1 : 0;
}
