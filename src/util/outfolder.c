/* outfolder.c — what an existing folder is (see outfolder.h). */
#include "outfolder.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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

int outfolder_is_model(const char *dir) {
    static const char *const weights[] = {
        "model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
        "pytorch_model.bin.index.json", "tf_model.h5", "flax_model.msgpack",
    };
    if (!is_file(dir, "config.json")) return 0;
    for (size_t i = 0; i < sizeof weights / sizeof weights[0]; i++)
        if (is_file(dir, weights[i])) return 1;
    return 0;
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
    char cwd[PATH_MAX], pwbuf[16384];
    struct passwd pw, *r = NULL;
    const char *pwhome = getpwuid_r(getuid(), &pw, pwbuf, sizeof pwbuf, &r) == 0 && r ? r->pw_dir : NULL;
    const char *here = getcwd(cwd, sizeof cwd);
    if (!strictly_inside(real, getenv("HOME")) && !strictly_inside(real, pwhome) &&
        !strictly_inside(real, here) && !strictly_inside(real, "/tmp"))
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
