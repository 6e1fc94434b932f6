/* test_util.c — see testutil.h. */
#include <dirent.h>
#include <limits.h>
#include <fcntl.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#include "hf_model.h"

void test_skipped(const char *file, const char *test, const char *why) {
    const char *base = strrchr(file, '/');
    size_t n = strlen(test);
    if (n > 3 && strcmp(test + n - 3, "_fn") == 0) n -= 3; /* Check's START_TEST adds it */
    fprintf(stderr, "%s: %.*s: skipped: %s\n", base ? base + 1 : file, (int)n, test, why);
}

const char *kern_case_skip(KernLevel lv, int threads, char *why, size_t size) {
    if (lv != KERN_PLAIN && !kern_supported(lv)) {
        snprintf(why, size, "%s (CPU lacks it)", kern_name(lv));
        return why;
    }
#ifndef _OPENMP
    if (threads > 1) {
        snprintf(why, size, "%d threads (built without OpenMP: make OMP=1 test)", threads);
        return why;
    }
#endif
    (void)threads;
    return NULL;
}

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

int png_load(const char *path, Png *p) {
    memset(p, 0, sizeof *p);
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    png_bytep *volatile rows = NULL;
    if (!info || setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        free(rows);
        free(p->px);
        p->px = NULL;
        fclose(f);
        return -1;
    }
    png_init_io(png, f);
    png_read_info(png, info);
    if (png_get_color_type(png, info) != PNG_COLOR_TYPE_RGB || png_get_bit_depth(png, info) != 8)
        png_error(png, "not 8-bit RGB");
    p->w = (int)png_get_image_width(png, info);
    p->h = (int)png_get_image_height(png, info);
    p->px = malloc((size_t)p->w * p->h * 3);
    rows = malloc((size_t)p->h * sizeof *rows);
    if (!p->px || !rows) png_error(png, "out of memory");
    for (int y = 0; y < p->h; y++) rows[y] = p->px + (size_t)y * p->w * 3;
    png_read_image(png, rows);
    png_read_end(png, info);
    png_textp text;
    int nt = 0;
    png_get_text(png, info, &text, &nt);
    for (int i = 0; i < nt; i++) {
        char *dst = strcmp(text[i].key, "Title") == 0         ? p->title
                    : strcmp(text[i].key, "Software") == 0    ? p->software
                    : strcmp(text[i].key, "Description") == 0 ? p->desc
                                                              : NULL;
        size_t size = dst == p->software ? sizeof p->software
                      : dst == p->title  ? sizeof p->title
                                         : sizeof p->desc;
        if (dst) snprintf(dst, size, "%s", text[i].text);
    }
    png_destroy_read_struct(&png, &info, NULL);
    free(rows);
    fclose(f);
    return 0;
}


int make_model_folder(const char *path, const Config *cfg, unsigned long long seed) {
    Model m;
    char err[512];
    if (mkdir(path, 0755) != 0 || model_init_random(&m, cfg, seed) != 0) return -1;
    const int rc = hf_export(&m, path, err, sizeof err);
    model_free(&m);
    if (rc) fprintf(stderr, "make_model_folder: %s\n", err);
    return rc ? -1 : 0;
}
