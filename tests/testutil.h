/* testutil.h — helpers shared by the test suites. */
#ifndef KVSCOPE_TESTUTIL_H
#define KVSCOPE_TESTUTIL_H

#include <stddef.h>

#include "kernels.h"
#include "model.h"

/* Path of the kvscope binary under test (set by the Makefile). */
#ifndef KVSCOPE_BIN
#define KVSCOPE_BIN "bin/kvscope"
#endif

/* A test that could not run a case says so, on stderr, in one form for every suite:
 * "check_kernels.c: test_matmul_exact: skipped: avx512 (CPU lacks it)". */
void test_skipped(const char *file, const char *test, const char *why);
#define TEST_SKIPPED(why) test_skipped(__FILE__, __func__, (why))

/* Why a kernel case cannot run here, written into why (size bytes), or NULL if it can:
 * a vector level lv the CPU lacks ("avx512 (CPU lacks it)"), or threads > 1 in a build
 * without OpenMP (which would only run the 1-thread case again). */
const char *kern_case_skip(KernLevel lv, int threads, char *why, size_t size);
/* The start of a loop test's case: lv = level, run on threads threads (the caller sets
 * them); a case that cannot run here says why (TEST_SKIPPED) and returns. */
#define LEVEL_OR_SKIP(lv, level, threads)                                                   \
    const KernLevel lv = (KernLevel)(level);                                                \
    do {                                                                                    \
        char why_[96];                                                                      \
        if (kern_case_skip(lv, (threads), why_, sizeof why_)) {                             \
            TEST_SKIPPED(why_);                                                             \
            return;                                                                         \
        }                                                                                   \
    } while (0)

/* A small config: L layers, NH heads, C width, context N, vocabulary V. */
Config tiny_config(int L, int NH, int C, int N, int V);

/* A Hugging Face folder at path (created) holding the built-in model of cfg drawn from
 * seed (model_init_random), written by hf_export: cfg.bos ≥ 0 gives it a start token.
 * 0, or -1. */
int make_model_folder(const char *path, const Config *cfg, unsigned long long seed);

/* Run KVSCOPE_BIN with args (NULL-terminated), stdout and stderr to the files
 * given (NULL: /dev/null). Returns the exit status, or -1 if it did not exit. */
int run_kvscope(const char *const *args, const char *out_path, const char *err_path);

/* The same in folder cwd (NULL: this one) with HOME=home (NULL: unchanged). */
int run_kvscope_at(const char *cwd, const char *home, const char *const *args, const char *out_path,
                   const char *err_path);
/* Write text to path (created or truncated); 0 or -1. */
int write_text_file(const char *path, const char *text);

/* A fresh empty folder under /tmp; returns its path in buf. */
const char *make_temp_dir(char *buf, size_t size);
/* 1 if the two files have the same bytes. */
int files_equal(const char *a, const char *b);
/* Whole file into a malloc'ed NUL-terminated buffer (NULL on error). */
char *read_file(const char *path, size_t *len);
/* Number of entries in a folder other than . and .. (-1 on error). */
int count_entries(const char *dir);

/* A PNG read back: 8-bit RGB pixels and its text chunks. */
typedef struct {
    int w, h;
    unsigned char *px; /* RGB, malloc'ed */
    char title[256], software[64], desc[1024];
} Png;
/* 0, or -1 if path is not an 8-bit RGB PNG. */
int png_load(const char *path, Png *p);

#endif
