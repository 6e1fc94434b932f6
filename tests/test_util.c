/* test_util.c — see testutil.h. */
#include <dirent.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

Config tiny_config(int L, int NH, int C, int N, int V) {
    Config c = config_default();
    c.L = L;
    c.NH = NH;
    c.C = C;
    c.N = N;
    c.V = V;
    return c;
}

int run_kvscope_at(const char *cwd, const char *home, const char *const *args, const char *out_path,
                   const char *err_path) {
    char bin[4096];
    const char *argv[64];
    int n = 0;
    if (!realpath(KVSCOPE_BIN, bin)) return -1; /* before a chdir makes it unreachable */
    argv[n++] = bin;
    for (; args[n - 1] && n < 63; n++) argv[n] = args[n - 1];
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int o = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err_path ? err_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o >= 0) dup2(o, 1);
        if (e >= 0) dup2(e, 2);
        if ((cwd && chdir(cwd) != 0) || (home && setenv("HOME", home, 1) != 0)) _exit(126);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) < 0) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int run_kvscope(const char *const *args, const char *out_path, const char *err_path) {
    return run_kvscope_at(NULL, NULL, args, out_path, err_path);
}

int write_text_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    int bad = fputs(text, f) < 0;
    return (fclose(f) != 0 || bad) ? -1 : 0;
}

const char *make_temp_dir(char *buf, size_t size) {
    snprintf(buf, size, "/tmp/kvscope-test.XXXXXX");
    return mkdtemp(buf);
}

char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            char *b = realloc(buf, 2 * cap + 1);
            if (!b) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) return NULL;
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

int files_equal(const char *a, const char *b) {
    size_t na, nb;
    char *x = read_file(a, &na), *y = read_file(b, &nb);
    int eq = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return eq;
}

int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}
