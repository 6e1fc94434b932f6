/* check_outputs.c — bin/kvscope never loses a user's files: the folders it refuses up
 * front, --force, symlinks, odd input files, a full disk, signals, what killed runs
 * left, and the exit-status rule, each through the command line as a user meets it. */
#define _GNU_SOURCE /* unshare, CLONE_NEWNS */
#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "outdir.h"
#include "testutil.h"

static char dir[1024]; /* a fresh folder per test, resolved (short: /tmp/...) */

static void setup(void) {
    char t[64], r[PATH_MAX];
    ck_assert_ptr_nonnull(make_temp_dir(t, sizeof t));
    ck_assert_ptr_nonnull(realpath(t, r));
    ck_assert_uint_lt(strlen(r), sizeof dir);
    memcpy(dir, r, strlen(r) + 1);
}

static void teardown(void) { remove_tree(dir); }

static const char *at(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "%s/%s", dir, name);
    return buf;
}

/* The built-in model, small: every command below runs in milliseconds. */
#define TINY "--layers", "1", "--heads", "2", "--dim", "16", "--vocab", "256"

/* stderr (file err) is one line "kvscope: ..." holding every needle (NULL-terminated)
 * and no temporary name; returns it (freed by the caller). */
static char *one_line(const char *err, const char *const *needles) {
    char *e = read_file(err, NULL);
    ck_assert_ptr_nonnull(e);
    ck_assert_msg(strncmp(e, "kvscope: ", 9) == 0 && strchr(e, '\n') == e + strlen(e) - 1,
                  "not one kvscope: line: %s", e);
    ck_assert_msg(!strstr(e, ".tmp.") && !strstr(e, ".old."), "names a temporary folder: %s", e);
    for (int i = 0; needles[i]; i++) ck_assert_msg(strstr(e, needles[i]), "lacks \"%s\": %s", needles[i], e);
    return e;
}

/* ---- refused before any work ------------------------------------------------ */

/* The cases: the working folder, its ancestors, /, $HOME, overlaps however
 * spelled; refused even with --force, before the model runs (stdout stays empty), the
 * user's files untouched. */
START_TEST(test_refused_up_front) {
    char work[PATH_MAX], sub[PATH_MAX], home[PATH_MAX], keep[PATH_MAX + 16], so[PATH_MAX], se[PATH_MAX];
    char kp[PATH_MAX + 8];
    snprintf(work, sizeof work, "%s/work", dir);
    snprintf(sub, sizeof sub, "%s/work/sub", dir);
    snprintf(home, sizeof home, "%s/h", dir);
    ck_assert_int_eq(mkdir(home, 0755), 0);
    snprintf(home, sizeof home, "%s/h/home", dir);
    snprintf(kp, sizeof kp, "%s/k/p", work);
    ck_assert_int_eq(mkdir(work, 0755) | mkdir(sub, 0755) | mkdir(home, 0755), 0);
    snprintf(keep, sizeof keep, "%s/keep.txt", work);
    ck_assert_int_eq(write_text_file(keep, "mine"), 0);
    at(so, sizeof so, "stdout");
    at(se, sizeof se, "stderr");
    static const char *const force[] = {NULL, "--force"};
    const struct {
        const char *cwd, *why, *args[24];
    } cases[] = {
        {work, "--out is the current folder", {"run", TINY, "--steps", "50", "--out", work}},
        {sub, "--out holds the current folder", {"run", TINY, "--out", "../.."}},
        {work, "--out is the current folder", {"kvmem", "--out", "."}},
        {work, "--plots holds the current folder", {"run", TINY, "--plots", dir}},
        {work, "--plots and --out must be separate", {"run", TINY, "--out", "k", "--plots", "./k"}},
        {work, "--plots and --out must be separate", {"run", TINY, "--out", "k", "--plots", kp}},
        {work, "--out is the root folder", {"export", TINY, "--out", "/"}},
        {work, "--out is your home folder", {"budget", TINY, "--out", home}},
        {work, "--out holds your home folder", {"compare", TINY, "--out", "../h"}},
        {sub, "--out holds the current folder", {"batch", TINY, "--out", ".."}},
        {work, "--charts and --out must be separate", {"compare", TINY, "--out", "c", "--charts", "c/"}},
        {work, "--out would replace --model's", {"run", "--model", "m/x", "--out", "m"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int f = 0; f < 2; f++) {
            const char *args[28];
            int n = 0;
            while (cases[i].args[n]) args[n] = cases[i].args[n], n++;
            if (force[f]) args[n++] = force[f];
            args[n] = NULL;
            ck_assert_msg(run_kvscope_at(cases[i].cwd, home, args, so, se) == 2, "case %zu", i);
            const char *needles[] = {cases[i].why, NULL};
            free(one_line(se, needles));
            char *out = read_file(so, NULL);
            ck_assert_msg(out && out[0] == '\0', "case %zu worked before refusing: %s", i, out);
            free(out);
            char *k = read_file(keep, NULL);
            ck_assert_str_eq(k, "mine");
            free(k);
            ck_assert_int_eq(count_entries(work), 2); /* keep.txt and sub/: nothing added */
            ck_assert_int_eq(count_entries(dir), 4);  /* work, h, stdout, stderr */
        }
    }
}
END_TEST

/* A folder kvscope did not write is refused with a line saying how to proceed; with
 * --force it is replaced; an empty one has nothing to lose. */
START_TEST(test_force) {
    char mine[PATH_MAX], f[PATH_MAX + 32], se[PATH_MAX];
    at(mine, sizeof mine, "mine");
    at(se, sizeof se, "stderr");
    ck_assert_int_eq(mkdir(mine, 0755), 0);
    snprintf(f, sizeof f, "%s/thesis.tex", mine);
    ck_assert_int_eq(write_text_file(f, "chapter 1"), 0);
    const char *run[] = {"run", TINY, "--steps", "1", "--quiet", "--out", mine, NULL};
    ck_assert_int_eq(run_kvscope(run, NULL, se), 2);
    const char *needles[] = {"--out is a folder kvscope did not write", "--force", mine, NULL};
    free(one_line(se, needles));
    ck_assert_int_eq(access(f, F_OK), 0);
    ck_assert_int_eq(count_entries(mine), 1);
    const char *forced[] = {"run", TINY, "--steps", "1", "--quiet", "--force", "--out", mine, NULL};
    ck_assert_int_eq(run_kvscope(forced, NULL, NULL), 0);
    ck_assert_int_eq(access(f, F_OK), -1);
    snprintf(f, sizeof f, "%s/" OUTDIR_MARKER, mine);
    char *m = read_file(f, NULL);
    ck_assert_msg(m && strncmp(m, "kvscope run --out\n", 18) == 0, "%s", m);
    free(m);
    ck_assert_int_eq(run_kvscope(run, NULL, NULL), 0); /* now kvscope's own: no --force needed */
    at(mine, sizeof mine, "empty");
    ck_assert_int_eq(mkdir(mine, 0755), 0);
    const char *kv[] = {"kvmem", "--out", mine, NULL};
    ck_assert_int_eq(run_kvscope(kv, NULL, NULL), 0);
    ck_assert_int_eq(count_entries(mine), 4);
    ck_assert_int_eq(count_entries(dir), 3); /* mine, empty, stderr: no sibling left */
}
END_TEST

/* --out through a symlink: the folder it points to is replaced, the link stays. */
START_TEST(test_symlinked_out) {
    char real[PATH_MAX], link[PATH_MAX], f[PATH_MAX + 32];
    at(real, sizeof real, "real");
    at(link, sizeof link, "link");
    ck_assert_int_eq(mkdir(real, 0755), 0);
    ck_assert_int_eq(symlink("real", link), 0);
    const char *run[] = {"run", TINY, "--steps", "1", "--quiet", "--record", "kv", "--out", link, NULL};
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(run_kvscope(run, NULL, NULL), 0);
        struct stat st;
        ck_assert_int_eq(lstat(link, &st), 0);
        ck_assert(S_ISLNK(st.st_mode));
        snprintf(f, sizeof f, "%s/kv_memory.csv", real);
        ck_assert_int_eq(access(f, F_OK), 0);
        ck_assert_int_eq(count_entries(dir), 2);
    }
}
END_TEST

/* ---- input files that are not regular ----------------------------------------- */

/* Each file of a model folder, and --prompts, as a FIFO, a device or a folder: exit 2
 * at once with a line naming it (a FIFO that blocked open() would hang: the test's
 * timeout would catch it). */
START_TEST(test_odd_input_files) {
    char m[PATH_MAX], p[PATH_MAX + 32], out[PATH_MAX], se[PATH_MAX];
    at(m, sizeof m, "m");
    at(out, sizeof out, "out");
    at(se, sizeof se, "stderr");
    const char *ex[] = {"export", TINY, "--out", m, "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(ex, NULL, NULL), 0);
    const char *run[] = {"run", "--model", m, "--steps", "1", "--quiet", "--out", out, NULL};
    static const char *const files[] = {"config.json", "model.safetensors", "vocab.json", "merges.txt"};
    char vocab[PATH_MAX + 32], merges[PATH_MAX + 32];
    snprintf(vocab, sizeof vocab, "%s/vocab.json", m);
    snprintf(merges, sizeof merges, "%s/merges.txt", m);
    for (size_t i = 0; i < 4; i++) {
        char saved[PATH_MAX + 48];
        snprintf(p, sizeof p, "%s/%s", m, files[i]);
        snprintf(saved, sizeof saved, "%s.saved", p);
        if (i < 2) ck_assert_int_eq(rename(p, saved), 0);
        /* the tokenizer takes both files or neither: the other one is a regular file */
        if (i == 2) ck_assert_int_eq(write_text_file(merges, "#version: 0.2\n"), 0);
        if (i == 3) ck_assert_int_eq(write_text_file(vocab, "{}"), 0);
        ck_assert_int_eq(mkfifo(p, 0644), 0);
        ck_assert_int_eq(run_kvscope(run, NULL, se), 2);
        const char *needles[] = {files[i], "is a FIFO, not a regular file", NULL};
        free(one_line(se, needles));
        ck_assert_int_eq(unlink(p), 0);
        if (i < 2) ck_assert_int_eq(rename(saved, p), 0);
        unlink(i == 2 ? merges : vocab);
    }
    ck_assert_int_eq(access(out, F_OK), -1);

    /* batch --prompts: a FIFO, /dev/zero (it would read forever), a folder, too big */
    at(p, sizeof p, "fifo");
    ck_assert_int_eq(mkfifo(p, 0644), 0);
    char big[PATH_MAX + 32];
    at(big, sizeof big, "big.txt");
    int fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, (16 << 20) + 1), 0); /* sparse: no disk used */
    close(fd);
    const struct { const char *path, *why; } prompts[] = {
        {p, "is a FIFO"}, {"/dev/zero", "is a character device"}, {dir, "is a directory"},
        {big, "larger than the limit of 16 MiB"},
    };
    for (size_t i = 0; i < sizeof prompts / sizeof prompts[0]; i++) {
        const char *b[] = {"batch", TINY, "--prompts", prompts[i].path, "--quiet", "--out", out, NULL};
        ck_assert_int_eq(run_kvscope(b, NULL, se), 2);
        const char *needles[] = {"--prompts", prompts[i].why, NULL};
        free(one_line(se, needles));
    }
    ck_assert_int_eq(access(out, F_OK), -1);
}
END_TEST

/* ---- a full disk ------------------------------------------------------------------ */

/* Every command that writes, on a tmpfs of 8 KiB (the marker takes one page, the
 * first file the other): exit 2, one line naming the user's path and the reason,
 * nothing left. Needs root's mount(8); where it cannot mount, says so and runs none. */
START_TEST(test_disk_full) {
    char small[PATH_MAX], cmd[PATH_MAX + 64], out[PATH_MAX + 8], csv[PATH_MAX + 8], se[PATH_MAX];
    at(small, sizeof small, "small");
    at(se, sizeof se, "stderr");
    ck_assert_int_eq(mkdir(small, 0755), 0);
    snprintf(out, sizeof out, "%s/o", small);
    snprintf(csv, sizeof csv, "%s/v.csv", small);
    const struct { const char *args[24]; } cases[] = {
        {{"run", TINY, "--steps", "4", "--record", "all", "--quiet", "--out", out}},
        {{"export", TINY, "--quiet", "--out", out}},
        {{"kvmem", "--out", out}},
        {{"budget", TINY, "--steps", "2", "--quiet", "--out", out}},
        {{"compare", TINY, "--lengths", "8", "--table-lengths", "none", "--decode-at", "8", "--repeat",
          "1", "--quiet", "--out", out}},
        {{"batch", TINY, "--prompt", "ab", "--prompt", "abc", "--steps", "2", "--quiet", "--out", out}},
        {{"verify", TINY, "--steps", "600", "--quiet", "--csv", csv}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(cmd, sizeof cmd, "mount -t tmpfs -o size=8k tmpfs '%s' 2>/dev/null", small);
        if (system(cmd) != 0) {
            TEST_SKIPPED("cannot mount a small tmpfs here (needs root): the disk-full cases");
            return;
        }
        if (i == 6) { /* one page for the CSV, which needs two */
            char fill[PATH_MAX + 16];
            snprintf(fill, sizeof fill, "%s/fill", small);
            write_text_file(fill, "x");
        }
        int rc = run_kvscope(cases[i].args, NULL, se);
        int left = count_entries(small) - (i == 6);
        snprintf(cmd, sizeof cmd, "umount '%s'", small);
        ck_assert_int_eq(system(cmd), 0);
        ck_assert_msg(rc == 2, "%s: exit %d", cases[i].args[0], rc);
        ck_assert_msg(left == 0, "%s left %d entries", cases[i].args[0], left);
        const char *needles[] = {"No space left on device", i == 6 ? csv : out, NULL};
        free(one_line(se, needles));
    }
}
END_TEST

/* ---- signals and killed runs --------------------------------------------------------- */

static pid_t spawn(const char *const *args) {
    const char *argv[40];
    int n = 0;
    argv[n++] = KVSCOPE_BIN;
    for (; args[n - 1]; n++) argv[n] = args[n - 1];
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        signal(SIGINT, SIG_DFL); /* as a shell starts it, not with the test runner's handlers */
        signal(SIGTERM, SIG_DFL);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* Entries of dir whose name starts with prefix. */
static int count_prefixed(const char *prefix) {
    char cmd[PATH_MAX + 128];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | grep -c '^%s' > '%s/count'", dir, prefix, dir);
    if (system(cmd) < 0) return -1;
    char p[PATH_MAX + 16], *t = read_file(at(p, sizeof p, "count"), NULL);
    int n = t ? atoi(t) : -1;
    free(t);
    remove(p);
    return n;
}

/* Ctrl-C or SIGTERM in the middle of a run: the process ends by the signal, the
 * previous --out is as it was, and no temporary folder is left beside it. */
START_TEST(test_signal_keeps_old_out) {
    char out[PATH_MAX], kv[PATH_MAX + 32], before[PATH_MAX];
    at(out, sizeof out, "out");
    snprintf(kv, sizeof kv, "%s/kv_memory.csv", out);
    const char *first[] = {"run", TINY, "--steps", "2", "--quiet", "--out", out, NULL};
    ck_assert_int_eq(run_kvscope(first, NULL, NULL), 0);
    char *was = read_file(kv, NULL);
    ck_assert_ptr_nonnull(was);
    snprintf(before, sizeof before, "%s", was);
    free(was);
    const int sigs[] = {SIGTERM, SIGINT};
    for (int k = 0; k < 2; k++) {
        const char *longer[] = {"run", "--steps", "1000", "--heatmaps", "--raw", "--quiet", "--out", out,
                                NULL};
        pid_t pid = spawn(longer);
        int seen = 0; /* wait until its temporary folder exists: the run is under way */
        for (int i = 0; i < 2000 && !seen; i++) {
            seen = count_prefixed("out.tmp.") > 0;
            if (!seen) nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
        }
        ck_assert_msg(seen, "no temporary folder appeared");
        ck_assert_int_eq(kill(pid, sigs[k]), 0);
        int st;
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == sigs[k], "status %d", st);
        char *now = read_file(kv, NULL);
        ck_assert_ptr_nonnull(now);
        ck_assert_str_eq(now, before);
        free(now);
        ck_assert_int_eq(count_entries(dir), 1);
    }
}
END_TEST

/* What a kill -9 left beside --out (its pid runs no more) goes at the next run; a
 * look-alike without the marker is the user's and stays. */
START_TEST(test_stale_siblings_removed) {
    char out[PATH_MAX], tmp[PATH_MAX], old[PATH_MAX], f[2 * PATH_MAX], notes[2 * PATH_MAX], name[64];
    at(out, sizeof out, "out");
    pid_t dead = fork();
    if (dead == 0) _exit(0);
    waitpid(dead, NULL, 0);
    snprintf(name, sizeof name, "out.tmp.%ld.Ab3dE6", (long)dead);
    ck_assert_int_eq(mkdir(at(tmp, sizeof tmp, name), 0755), 0);
    snprintf(f, sizeof f, "%s/attention.csv", tmp);
    ck_assert_int_eq(write_text_file(f, "half a file"), 0);
    snprintf(f, sizeof f, "%s/" OUTDIR_MARKER, tmp);
    ck_assert_int_eq(write_text_file(f, "kvscope run --out\n"), 0);
    snprintf(name, sizeof name, "out.old.%ld.xY7zW1", (long)dead);
    ck_assert_int_eq(mkdir(at(old, sizeof old, name), 0755), 0);
    snprintf(notes, sizeof notes, "%s/notes.txt", old);
    ck_assert_int_eq(write_text_file(notes, "not kvscope's"), 0);
    const char *run[] = {"run", TINY, "--steps", "1", "--quiet", "--out", out, NULL};
    ck_assert_int_eq(run_kvscope(run, NULL, NULL), 0);
    ck_assert_int_eq(count_prefixed("out.tmp."), 0);
    ck_assert_int_eq(access(notes, F_OK), 0);
    ck_assert_int_eq(count_entries(dir), 2);
}
END_TEST

/* ---- output files: only over kvscope's own, never over an input ------------------------ */

#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <sys/un.h>

#include "safetensors.h"

/* A tiny training run's options (the issue's $T); the corpus is dir/C. */
#define TRAIN_TINY "--steps", "2", "--warmup", "1", "--layers", "1", "--heads", "2", "--dim", "16", \
                   "--ctx", "32", "--batch", "2", "--quiet"

/* 200 KB of words, different for each seed. */
static void write_words(const char *path, unsigned seed) {
    static const char *const words[] = {"the", "lord", "said", "unto", "moses", "and", "god", "saw",
                                        "light", "that", "it", "was", "good"};
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    for (size_t n = 0; n < 200000;) {
        seed = seed * 1103515245u + 12345u;
        n += (size_t)fprintf(f, "%s ", words[(seed >> 16) % 13]);
    }
    ck_assert_int_eq(fclose(f), 0);
}

/* The file at path is still exactly text. */
static void still(const char *path, const char *text) {
    char *t = read_file(path, NULL);
    ck_assert_msg(t && strcmp(t, text) == 0, "%s changed: %.60s", path, t ? t : "(gone)");
    free(t);
}

/* A unix socket bound at path (its fd, or -1 when the system will not). */
static int bind_socket(const char *path) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) return -1;
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) close(fd), fd = -1;
    return fd;
}

/* train --checkpoint over anything but a checkpoint: refused before any work, exit 2,
 * naming the path, with and without --force, and with --checkpoint-every 0 (nothing
 * was ever to be written, yet notes.txt was removed). */
START_TEST(test_checkpoint_only_over_checkpoints) {
    char c[PATH_MAX], notes[PATH_MAX], model[PATH_MAX], page[PATH_MAX], empty[PATH_MAX],
        link[PATH_MAX], dev[PATH_MAX], fifo[PATH_MAX], sock[PATH_MAX], out[PATH_MAX], so[PATH_MAX],
        se[PATH_MAX];
    write_words(at(c, sizeof c, "C"), 1);
    char *corpus = read_file(c, NULL);
    ck_assert_ptr_nonnull(corpus);
    ck_assert_int_eq(write_text_file(at(notes, sizeof notes, "notes.txt"), "precious\n"), 0);
    ck_assert_int_eq(write_text_file(at(model, sizeof model, "model.safetensors"), "\x08safetensors?"), 0);
    ck_assert_int_eq(write_text_file(at(page, sizeof page, "page.html"), "<!DOCTYPE html>\n"), 0);
    ck_assert_int_eq(mkdir(at(empty, sizeof empty, "empty"), 0755), 0);
    ck_assert_int_eq(symlink(notes, at(link, sizeof link, "link")), 0);
    ck_assert_int_eq(mkfifo(at(fifo, sizeof fifo, "fifo"), 0644), 0);
    const int has_dev = mknod(at(dev, sizeof dev, "dev0"), S_IFCHR | 0644, makedev(1, 3)) == 0;
    if (!has_dev) TEST_SKIPPED("mknod not permitted here (needs root): the device-node case");
    const int sfd = bind_socket(at(sock, sizeof sock, "sock"));
    if (sfd < 0) TEST_SKIPPED("cannot bind a unix socket here: the socket case");
    at(out, sizeof out, "m");
    at(so, sizeof so, "stdout");
    at(se, sizeof se, "stderr");
    const char *paths[] = {notes, c, model, page, empty, link, fifo, has_dev ? dev : NULL,
                           sfd >= 0 ? sock : NULL};
    static const char *const force[] = {NULL, "--force"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        for (int f = 0; f < 2 && paths[i]; f++) {
            const char *args[40] = {"train", "--corpus", c, "--out", out, "--checkpoint", paths[i],
                                    "--checkpoint-every", "0", TRAIN_TINY};
            int n = 0;
            while (args[n]) n++;
            args[n] = force[f];
            ck_assert_msg(run_kvscope(args, so, se) == 2, "--checkpoint %s%s not refused", paths[i],
                          f ? " --force" : "");
            const char *needles[] = {"--checkpoint", paths[i], NULL};
            free(one_line(se, needles));
            char *o = read_file(so, NULL);
            ck_assert_msg(o && !o[0], "worked before refusing: %s", o);
            free(o);
            ck_assert_msg(access(out, F_OK) != 0, "--out written though the checkpoint was refused");
        }
    }
    still(notes, "precious\n");
    still(c, corpus);
    still(model, "\x08safetensors?");
    still(page, "<!DOCTYPE html>\n");
    struct stat st;
    ck_assert_int_eq(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), 1);
    ck_assert_int_eq(stat(empty, &st) == 0 && S_ISDIR(st.st_mode), 1);
    ck_assert_int_eq(stat(fifo, &st) == 0 && S_ISFIFO(st.st_mode), 1);
    if (has_dev) ck_assert_int_eq(stat(dev, &st) == 0 && S_ISCHR(st.st_mode), 1);
    if (sfd >= 0) {
        ck_assert_int_eq(stat(sock, &st) == 0 && S_ISSOCK(st.st_mode), 1);
        close(sfd);
    }
    free(corpus);
}
END_TEST

/* The default DIR.ckpt follows the same rule: a user's model.ckpt is refused, not
 * deleted; --out t/. names its checkpoint t.ckpt (not t/..ckpt) and runs. */
START_TEST(test_default_checkpoint) {
    char c[PATH_MAX], mine[PATH_MAX], out[PATH_MAX], t[PATH_MAX], tdot[PATH_MAX + 4], se[PATH_MAX],
        f[PATH_MAX + 32];
    write_words(at(c, sizeof c, "C"), 1);
    ck_assert_int_eq(write_text_file(at(mine, sizeof mine, "model.ckpt"), "mine\n"), 0);
    at(out, sizeof out, "model");
    at(se, sizeof se, "stderr");
    const char *a[] = {"train", "--corpus", c, "--out", out, TRAIN_TINY, NULL};
    ck_assert_int_eq(run_kvscope(a, NULL, se), 2);
    const char *needles[] = {"--checkpoint", mine, NULL};
    free(one_line(se, needles));
    still(mine, "mine\n");
    ck_assert_int_eq(access(out, F_OK) != 0, 1);
    ck_assert_int_eq(mkdir(at(t, sizeof t, "t"), 0755), 0);
    snprintf(tdot, sizeof tdot, "%s/.", t);
    const char *b[] = {"train", "--corpus", c, "--out", tdot, "--checkpoint-every", "1", TRAIN_TINY,
                       NULL};
    ck_assert_int_eq(run_kvscope(b, NULL, se), 0);
    char *e = read_file(se, NULL);
    ck_assert_msg(e && !strstr(e, "..ckpt"), "%s", e);
    free(e);
    snprintf(f, sizeof f, "%s/model.safetensors", t);
    ck_assert_int_eq(access(f, F_OK), 0);
    ck_assert_int_eq(count_prefixed("t.ckpt"), 0); /* written at step 1, removed at the end */
    ck_assert_int_eq(count_prefixed("t."), 0);
}
END_TEST

/* No output may be an input, with or without --force, however it is reached: a model's
 * file as --html or --csv (also through a hard link), a --scripts folder as compare's
 * --out without --charts, a bind mount of the --model folder as --out. */
START_TEST(test_output_is_not_an_input) {
    char m[PATH_MAX], w[PATH_MAX + 32], cfg[PATH_MAX + 32], hard[PATH_MAX], scripts[PATH_MAX],
        gp[PATH_MAX + 32], out[PATH_MAX], se[PATH_MAX];
    at(m, sizeof m, "m");
    at(se, sizeof se, "stderr");
    const char *ex[] = {"export", TINY, "--out", m, "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(ex, NULL, NULL), 0);
    snprintf(w, sizeof w, "%s/model.safetensors", m);
    snprintf(cfg, sizeof cfg, "%s/config.json", m);
    char *weights = read_file(w, NULL), *config = read_file(cfg, NULL);
    ck_assert_ptr_nonnull(weights);
    ck_assert_ptr_nonnull(config);
    size_t wn;
    free(read_file(w, &wn));
    ck_assert_int_eq(link(cfg, at(hard, sizeof hard, "hard.json")), 0);
    const struct { const char *args[16], *needle; } cases[] = {
        {{"run", "--model", m, "--steps", "1", "--quiet", "--html", w}, "--html would replace --model's"},
        {{"verify", "--model", m, "--steps", "1", "--quiet", "--csv", cfg}, "--csv would replace --model's"},
        {{"verify", "--model", m, "--steps", "1", "--quiet", "--csv", hard}, "--csv would replace --model's"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[20];
        int n = 0;
        while (cases[i].args[n]) args[n] = cases[i].args[n], n++;
        args[n++] = "--force", args[n] = NULL;
        ck_assert_msg(run_kvscope(args, NULL, se) == 2, "case %zu not refused", i);
        const char *needles[] = {cases[i].needle, NULL};
        free(one_line(se, needles));
    }
    size_t wn2;
    char *w2 = read_file(w, &wn2);
    ck_assert_msg(w2 && wn2 == wn && memcmp(w2, weights, wn) == 0, "the weights changed");
    free(w2);
    still(cfg, config);
    /* compare --out over the scripts folder, without --charts */
    ck_assert_int_eq(mkdir(at(scripts, sizeof scripts, "plots"), 0755), 0);
    snprintf(gp, sizeof gp, "%s/flops.gp", scripts);
    ck_assert_int_eq(write_text_file(gp, "reset\n"), 0);
    const char *cmp[] = {"compare", TINY, "--quiet", "--out", scripts, "--scripts", scripts, "--force",
                         NULL};
    ck_assert_int_eq(run_kvscope(cmp, NULL, se), 2);
    const char *cn[] = {"--scripts", scripts, NULL};
    free(one_line(se, cn));
    still(gp, "reset\n");
    /* a bind mount of the model folder as --out (root and mount support needed) */
    at(out, sizeof out, "m2");
    ck_assert_int_eq(mkdir(out, 0755), 0);
    char cmd[3 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "mount --bind '%s' '%s' 2>/dev/null", m, out);
    if (system(cmd) != 0) {
        TEST_SKIPPED("cannot bind-mount here (needs root and mount support): the bind-mount case");
    } else {
        /* the weights under another path (same device and inode): not an output either */
        char wm[PATH_MAX + 32];
        snprintf(wm, sizeof wm, "%s/model.safetensors", out);
        const char *h[] = {"run", "--model", m, "--steps", "1", "--quiet", "--html", wm, "--force", NULL};
        const int rh = run_kvscope(h, NULL, se);
        const char *hn[] = {"--html would replace --model's", NULL};
        char *hl = rh == 2 ? one_line(se, hn) : NULL;
        /* as --out, the mount itself is refused first: a mount point is never replaced */
        const char *r[] = {"run", "--model", m, "--steps", "1", "--quiet", "--out", out, "--force", NULL};
        const int rc = run_kvscope(r, NULL, se);
        snprintf(cmd, sizeof cmd, "umount '%s'", out);
        ck_assert_int_eq(system(cmd), 0);
        ck_assert_int_eq(rh, 2);
        free(hl);
        ck_assert_int_eq(rc, 2);
        const char *bn[] = {"--out is a mount point", NULL};
        free(one_line(se, bn));
        still(cfg, config);
    }
    free(weights);
    free(config);
}
END_TEST

/* --html directly in --out may not take a name kvscope writes there. */
START_TEST(test_html_not_over_out_files) {
    char out[PATH_MAX], page[PATH_MAX + 32], se[PATH_MAX];
    at(out, sizeof out, "a");
    at(se, sizeof se, "stderr");
    static const char *const names[] = {"tokens.csv", "attention.csv", OUTDIR_MARKER};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(page, sizeof page, "%s/%s", out, names[i]);
        const char *a[] = {"run", TINY, "--steps", "1", "--quiet", "--record",
                           i == 1 ? "shapes" : "tokens", "--out", out, "--html", page, NULL};
        ck_assert_msg(run_kvscope(a, NULL, se) == 2, "--html %s not refused", names[i]);
        const char *needles[] = {"--html", names[i], out, NULL};
        free(one_line(se, needles));
        ck_assert_int_eq(access(out, F_OK) != 0, 1);
    }
}
END_TEST

/* Temporary checkpoints a kill -9 left (*.ckpt.tmp.<dead pid>.*, empty or a checkpoint's
 * start) go at the next run, resumed or fresh, even one that writes no checkpoint; a
 * look-alike of the user's stays. */
START_TEST(test_stale_checkpoint_temps) {
    char c[PATH_MAX], out[PATH_MAX], p[PATH_MAX], user[PATH_MAX], name[64];
    write_words(at(c, sizeof c, "C"), 1);
    at(out, sizeof out, "t");
    pid_t dead = fork();
    if (dead == 0) _exit(0);
    waitpid(dead, NULL, 0);
    snprintf(name, sizeof name, "t.ckpt.tmp.%ld.Ab3dE6", (long)dead);
    ck_assert_int_eq(write_text_file(at(p, sizeof p, name), ""), 0);
    snprintf(name, sizeof name, "t.ckpt.tmp.%ld.Zz9yX8", (long)dead);
    ck_assert_int_eq(write_text_file(at(p, sizeof p, name), "KVSCKPT\x02half a checkpoint"), 0);
    snprintf(name, sizeof name, "t.ckpt.tmp.%ld.Qq1wE2", (long)dead);
    ck_assert_int_eq(write_text_file(at(user, sizeof user, name), "the user's\n"), 0);
    const char *a[] = {"train", "--corpus", c, "--out", out, "--checkpoint-every", "0", TRAIN_TINY, NULL};
    ck_assert_int_eq(run_kvscope(a, NULL, NULL), 0);
    ck_assert_int_eq(count_prefixed("t.ckpt.tmp."), 1);
    still(user, "the user's\n");
}
END_TEST

/* Wait for path to exist (a checkpoint written): 1, or 0 after about 20 s. */
static int wait_for(const char *path) {
    for (int i = 0; i < 4000; i++) {
        if (access(path, F_OK) == 0) return 1;
        nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
    }
    return 0;
}

/* --resume refuses every option that changes the run, naming it and both values; the
 * same options resume. */
START_TEST(test_resume_refuses_another_run) {
    char c[PATH_MAX], c2[PATH_MAX], out[PATH_MAX], ckpt[PATH_MAX], se[PATH_MAX];
    write_words(at(c, sizeof c, "C"), 1);
    write_words(at(c2, sizeof c2, "C2"), 2);
    at(out, sizeof out, "t");
    at(ckpt, sizeof ckpt, "t.ckpt");
    at(se, sizeof se, "stderr");
#define RUN_OPTS "--layers", "1", "--heads", "2", "--dim", "16", "--ctx", "32", "--batch", "2", \
                 "--steps", "20000", "--warmup", "1", "--quiet", "--out", out
    const char *first[] = {"train", "--corpus", c, RUN_OPTS, "--checkpoint-every", "1", NULL};
    pid_t pid = spawn(first);
    const int saw = wait_for(ckpt);
    kill(pid, SIGTERM);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(saw, "no checkpoint appeared");
    const struct { const char *opt, *val, *want[3]; } cases[] = {
        {"--lr", "0.001", {"--lr 0.003", "0.001"}},
        {"--clip", "0.5", {"--clip 1", "0.5"}},
        {"--lr-final", "0.5", {"--lr-final 0.1", "0.5"}},
        {"--weight-decay", "0", {"--weight-decay 0.1", "has 0"}},
        {"--init-std", "0.02", {"--init-std 0.08", "0.02"}},
        {"--repeat-share", "0.5", {"--repeat-share 0.25", "0.5"}},
        {"--period-max", "12", {"--period-max 16", "12"}},
        {"--repeat-text", "0.25", {"--repeat-text 0.5", "0.25"}},
        {"--warmup", "3", {"--warmup 1", "3"}},
        {"--steps", "19999", {"--steps 20000", "19999"}},
        {"--corpus", c2, {"--corpus of", "bytes (hash"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *a[40] = {"train", "--corpus", c, RUN_OPTS, "--resume", cases[i].opt, cases[i].val,
                             NULL};
        ck_assert_msg(run_kvscope(a, NULL, se) == 2, "--resume %s %s accepted", cases[i].opt,
                      cases[i].val);
        const char *needles[] = {cases[i].want[0], cases[i].want[1], NULL};
        free(one_line(se, needles));
    }
    /* the same options resume (and, stopped again, keep a checkpoint) */
    const char *same[] = {"train", "--corpus", c, RUN_OPTS, "--resume", "--checkpoint-every", "1", NULL};
    struct stat was, now;
    ck_assert_int_eq(stat(ckpt, &was), 0);
    pid = spawn(same);
    int saved = 0; /* until it has written a checkpoint of its own (renamed in: a new inode) */
    for (int i = 0; i < 4000 && !saved; i++) {
        saved = stat(ckpt, &now) == 0 && now.st_ino != was.st_ino;
        if (!saved) nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
    }
    kill(pid, SIGTERM);
    ck_assert_msg(saved, "the resumed run wrote no checkpoint");
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 143, "resume with the same options: %d", st);
    ck_assert_int_eq(access(ckpt, F_OK), 0);
    /* a checkpoint of the format before (version 1, without the run's options) */
    ck_assert_int_eq(write_text_file(ckpt, "KVSCKPT\001 and the rest of an old checkpoint"), 0);
    const char *old[] = {"train", "--corpus", c, RUN_OPTS, "--resume", NULL};
    ck_assert_int_eq(run_kvscope(old, NULL, se), 2);
    const char *vn[] = {"checkpoint version 1", "version 3", NULL};
    free(one_line(se, vn));
#undef RUN_OPTS
}
END_TEST

/* Replace the first from in buf (size) by to; the test fails when from is not there. */
static void swap_text(char *buf, size_t size, const char *from, const char *to) {
    char *p = strstr(buf, from), rest[4096];
    ck_assert_msg(p != NULL, "no %s in: %s", from, buf);
    snprintf(rest, sizeof rest, "%s", p + strlen(from));
    ck_assert_uint_lt((size_t)(p - buf) + strlen(to) + strlen(rest), size);
    snprintf(p, size - (size_t)(p - buf), "%s%s", to, rest);
}

/* A config whose tensors cannot be in its file is refused as that, naming both sizes;
 * a weight past fp16's range is named with its tensor under --weights fp16. */
START_TEST(test_model_mismatch_messages) {
    char m[PATH_MAX], cfg[PATH_MAX + 32], w[PATH_MAX + 32], se[PATH_MAX], err[256];
    at(m, sizeof m, "m");
    at(se, sizeof se, "stderr");
    const char *ex[] = {"export", TINY, "--out", m, "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(ex, NULL, NULL), 0);
    snprintf(cfg, sizeof cfg, "%s/config.json", m);
    snprintf(w, sizeof w, "%s/model.safetensors", m);
    /* one weight of c_fc set to 70000: finite in float32, infinite in fp16 */
    SafeTensors st;
    ck_assert_int_eq(st_open(&st, w, err, sizeof err), 0);
    long off = -1;
    for (size_t i = 0; i < st.n; i++)
        if (strstr(st.t[i].name, "h.0.mlp.c_fc.weight"))
            off = (long)((const unsigned char *)st.data - (const unsigned char *)st.map) +
                  (long)st.t[i].begin + 4 * 5;
    st_close(&st);
    ck_assert_int_gt(off, 0);
    FILE *f = fopen(w, "r+b");
    ck_assert_ptr_nonnull(f);
    const float big = 70000.0f;
    ck_assert_int_eq(fseek(f, off, SEEK_SET), 0);
    ck_assert_int_eq(fwrite(&big, 4, 1, f), 1);
    ck_assert_int_eq(fclose(f), 0);
    const char *fp16[] = {"run", "--model", m, "--steps", "1", "--quiet", "--weights", "fp16", NULL};
    ck_assert_int_eq(run_kvscope(fp16, NULL, se), 2);
    const char *n16[] = {"h.0.mlp.c_fc.weight", "70000", "fp16's range", NULL};
    free(one_line(se, n16));
    /* the same file under a config of 6.4 billion parameters */
    char *text = read_file(cfg, NULL);
    ck_assert_ptr_nonnull(text);
    char big_cfg[4096];
    snprintf(big_cfg, sizeof big_cfg, "%s", text);
    free(text);
    swap_text(big_cfg, sizeof big_cfg, "\"n_layer\": 1,", "\"n_layer\": 32,");
    swap_text(big_cfg, sizeof big_cfg, "\"n_embd\": 16,", "\"n_embd\": 4096,");
    swap_text(big_cfg, sizeof big_cfg, "\"n_head\": 2,", "\"n_head\": 32,");
    ck_assert_int_eq(write_text_file(cfg, big_cfg), 0);
    const char *r[] = {"run", "--model", m, "--steps", "1", "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(r, NULL, se), 2);
    const char *nb[] = {"does not match", "25.8 GB", NULL};
    free(one_line(se, nb));
}
END_TEST

static void add_file_output_tests(TCase *tc) {
    tcase_add_test(tc, test_checkpoint_only_over_checkpoints);
    tcase_add_test(tc, test_default_checkpoint);
    tcase_add_test(tc, test_output_is_not_an_input);
    tcase_add_test(tc, test_html_not_over_out_files);
    tcase_add_test(tc, test_stale_checkpoint_temps);
    tcase_add_test(tc, test_resume_refuses_another_run);
    tcase_add_test(tc, test_model_mismatch_messages);
}

/* ---- the exit-status rule -------------------------------------------------------------- */

START_TEST(test_exit_rule) {
    char out[PATH_MAX], se[PATH_MAX], so[PATH_MAX];
    at(out, sizeof out, "out");
    at(se, sizeof se, "stderr");
    at(so, sizeof so, "stdout");
    const char *help[] = {"--help", NULL};
    ck_assert_int_eq(run_kvscope(help, so, NULL), 0);
    char *h = read_file(so, NULL);
    ck_assert_msg(h && strstr(h, "exit status: 0 success; 1 the check failed") && strstr(h, "2 bad input"),
                  "%s", h);
    free(h);
    static const char *const cmds[] = {"run", "verify", "export", "budget", "compare", "batch", "kvmem"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        const char *a[] = {cmds[i], "--help", NULL};
        ck_assert_int_eq(run_kvscope(a, so, NULL), 0);
        h = read_file(so, NULL);
        ck_assert_msg(h && strstr(h, "exit status: 0 success") && (i == 1 || strstr(h, "--force")),
                      "%s --help: %s", cmds[i], h);
        free(h);
    }
    /* 1: the check failed; 2: bad input; both with stderr lines of their own */
    const char *bug[] = {"verify", TINY, "--steps", "3", "--quiet", "--article-bug", NULL};
    ck_assert_int_eq(run_kvscope(bug, so, NULL), 1);
    h = read_file(so, NULL);
    ck_assert_msg(h && strstr(h, "MISMATCH"), "%s", h);
    free(h);
    const char *sink[] = {"run", TINY, "--sink", "2", "--out", out, NULL};
    ck_assert_int_eq(run_kvscope(sink, NULL, se), 2);
    const char *needles[] = {"--sink needs --window", "--sink 2", NULL};
    free(one_line(se, needles));
    /* verify --csv over a file kvscope did not write: refused before the run */
    char csv[PATH_MAX + 8];
    snprintf(csv, sizeof csv, "%s/notes.csv", dir);
    ck_assert_int_eq(write_text_file(csv, "my,own\n"), 0);
    const char *v[] = {"verify", TINY, "--steps", "1", "--csv", csv, NULL};
    ck_assert_int_eq(run_kvscope(v, so, se), 2);
    const char *vn[] = {"--csv is a file kvscope did not write", "--force", csv, NULL};
    free(one_line(se, vn));
    h = read_file(csv, NULL);
    ck_assert_str_eq(h, "my,own\n");
    free(h);
}
END_TEST

/* ---- mount points, the password database's home --------------------------------------- */

/* mount --bind src dst (or a tmpfs on dst when src is NULL); 0, or -1 where this
 * machine cannot (not root, no mount(8)). */
static int mount_on(const char *src, const char *dst) {
    char cmd[3 * PATH_MAX];
    if (src) snprintf(cmd, sizeof cmd, "mount --bind '%s' '%s' 2>/dev/null", src, dst);
    else snprintf(cmd, sizeof cmd, "mount -t tmpfs -o size=64k tmpfs '%s' 2>/dev/null", dst);
    return system(cmd) == 0 ? 0 : -1;
}

/* Unmount everything mounted under the test's folder, wherever a run moved it (a
 * kvscope that swaps a folder holding a mount point moves the mount with it). */
static void unmount_all(void) {
    char cmd[PATH_MAX + 128];
    snprintf(cmd, sizeof cmd, "awk '{print $2}' /proc/mounts | grep '^%s/' | sort -r | "
                              "xargs -r -n1 umount -l", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* The case: o is kvscope's folder and o/mnt a bind mount of data/ (the same
 * file system). The run is refused before any work, naming o/mnt, with or without
 * --force; data/ keeps its files and no o.tmp.* is left. An empty mount point as --out
 * is refused before the run too (it could never be swapped). */
START_TEST(test_mount_inside_out) {
    char data[PATH_MAX], out[PATH_MAX], mnt[PATH_MAX + 16], keep[PATH_MAX + 16], se[PATH_MAX],
        so[PATH_MAX], want[PATH_MAX + 32];
    at(data, sizeof data, "data");
    at(out, sizeof out, "o");
    at(se, sizeof se, "stderr");
    at(so, sizeof so, "stdout");
    snprintf(keep, sizeof keep, "%s/keep.txt", data);
    snprintf(mnt, sizeof mnt, "%s/mnt", out);
    ck_assert_int_eq(mkdir(data, 0755), 0);
    ck_assert_int_eq(write_text_file(keep, "precious"), 0);
    const char *run[] = {"run", TINY, "--steps", "1", "--quiet", "--out", out, NULL};
    const char *forced[] = {"run", TINY, "--steps", "1", "--quiet", "--force", "--out", out, NULL};
    ck_assert_int_eq(run_kvscope(run, NULL, NULL), 0);
    ck_assert_int_eq(mkdir(mnt, 0755), 0);
    if (mount_on(data, mnt) != 0) {
        TEST_SKIPPED("cannot bind-mount a folder here (needs root and mount(8))");
        return;
    }
    int rc[2], left[2];
    for (int f = 0; f < 2; f++) {
        rc[f] = run_kvscope(f ? forced : run, NULL, se);
        left[f] = count_prefixed("o.tmp.");
    }
    int kept = access(keep, F_OK) == 0;
    unmount_all();
    ck_assert_msg(kept, "the files of the mounted folder were removed");
    for (int f = 0; f < 2; f++) {
        ck_assert_int_eq(rc[f], 2);
        ck_assert_int_eq(left[f], 0);
    }
    snprintf(want, sizeof want, "%s/mnt", out);
    const char *needles[] = {"--out holds a mount point", want, NULL};
    free(one_line(se, needles));
    char *t = read_file(keep, NULL);
    ck_assert_str_eq(t, "precious");
    free(t);
    /* an empty mount point: refused before the run prints anything */
    ck_assert_int_eq(mount_on(NULL, mnt), 0);
    const char *into[] = {"run", TINY, "--steps", "1", "--out", mnt, NULL};
    int r = run_kvscope(into, so, se);
    unmount_all();
    ck_assert_int_eq(r, 2);
    const char *n2[] = {"--out is a mount point", mnt, NULL};
    free(one_line(se, n2));
    char *o = read_file(so, NULL);
    ck_assert_msg(o && o[0] == '\0', "ran before refusing: %s", o);
    free(o);
}
END_TEST

/* Run kvscope with $HOME unset (or empty) while the password database names fake as
 * the running user's home: a private mount namespace binds a one-line passwd file over
 * /etc/passwd for this child only. The real home is never named. Returns the exit
 * status, -1 if it did not exit, 3 when the namespace could not be made. */
static int run_with_passwd_home(const char *fake, int empty, const char *const *args, const char *se) {
    char pw[PATH_MAX + 16], line[2 * PATH_MAX];
    snprintf(pw, sizeof pw, "%s/passwd", dir);
    snprintf(line, sizeof line, "root:x:%ld:%ld:root:%s:/bin/sh\n", (long)getuid(), (long)getgid(), fake);
    ck_assert_int_eq(write_text_file(pw, line), 0);
    fflush(NULL);
    pid_t p = fork();
    ck_assert_int_ge(p, 0);
    if (p == 0) {
        /* private first: the bind over /etc/passwd must not reach the rest of the machine */
        if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
            mount(pw, "/etc/passwd", NULL, MS_BIND, NULL) != 0)
            _exit(3);
        struct passwd *u = getpwuid(getuid());
        if (!u || strcmp(u->pw_dir, fake) != 0) _exit(3); /* the lookup does not read /etc/passwd */
        if (empty ? setenv("HOME", "", 1) : unsetenv("HOME")) _exit(3);
        _exit(run_kvscope(args, NULL, se) & 0xff);
    }
    int st;
    ck_assert_int_eq(waitpid(p, &st, 0), p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* `env -u HOME kvscope run --out ~ --force` and `HOME= ...`: the home folder of the
 * password database is refused as $HOME's is, its files untouched. */
START_TEST(test_passwd_home_refused) {
    char fake[PATH_MAX], notes[PATH_MAX + 16], se[PATH_MAX];
    at(fake, sizeof fake, "home");
    at(se, sizeof se, "stderr");
    snprintf(notes, sizeof notes, "%s/notes.txt", fake);
    ck_assert_int_eq(mkdir(fake, 0755), 0);
    ck_assert_int_eq(write_text_file(notes, "mine"), 0);
    const char *run[] = {"run", TINY, "--steps", "1", "--quiet", "--force", "--out", fake, NULL};
    for (int empty = 0; empty < 2; empty++) {
        int rc = run_with_passwd_home(fake, empty, run, se);
        if (rc == 3) {
            TEST_SKIPPED("cannot bind a passwd file in a private mount namespace (needs root)");
            return;
        }
        ck_assert_msg(rc == 2, "HOME %s: exit %d", empty ? "empty" : "unset", rc);
        const char *needles[] = {"--out is your home folder", fake, NULL};
        free(one_line(se, needles));
        ck_assert_int_eq(access(notes, F_OK), 0);
        ck_assert_int_eq(count_entries(fake), 1);
    }
}
END_TEST

/* ---- chart scripts ---------------------------------------------------------------------- */

/* 1 if path is a regular file that is not empty. */
static int nonempty(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

/* Copy the chart scripts of plots/ (the ones the commands run, style.gp, publish.sh)
 * into folder to; 0 or -1. */
static int copy_scripts(const char *plots, const char *to) {
    char cmd[4 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cd '%s' && cp flops.gp prefill_decode.gp time.gp "
             "heads.gp train_loss.gp style.gp publish.sh '%s'/", to, plots, to);
    return system(cmd) == 0 ? 0 : -1;
}

/* --scripts from another folder: heads and train find style.gp beside the script (it was
 * loaded from ./plots: heads failed, train dropped its chart). A FIFO as style.gp is
 * refused before gnuplot starts (it hung). An empty flops.gp: compare exits 2 naming the
 * chart it did not get, rather than printing "wrote" for a file that does not exist. */
START_TEST(test_chart_scripts) {
    char plots[PATH_MAX], sc[PATH_MAX], se[PATH_MAX], so[PATH_MAX], f[PATH_MAX + 32], corpus[PATH_MAX];
    if (!realpath("plots", plots) || system("command -v gnuplot >/dev/null && "
                                            "command -v pdftocairo >/dev/null") != 0) {
        TEST_SKIPPED("gnuplot or pdftocairo missing, or not run from the repository root");
        return;
    }
    at(sc, sizeof sc, "sc");
    at(se, sizeof se, "stderr");
    at(so, sizeof so, "stdout");
    const char *heads[] = {"heads", TINY, "--quiet", "--out", "h", "--scripts", plots, NULL};
    ck_assert_int_eq(run_kvscope_at(dir, NULL, heads, NULL, se), 0);
    snprintf(f, sizeof f, "%s/h/heads.png", dir);
    ck_assert_msg(nonempty(f), "no heads.png");
    at(corpus, sizeof corpus, "corpus.txt");
    FILE *c = fopen(corpus, "w");
    ck_assert_ptr_nonnull(c);
    for (int i = 0; i < 6000; i++) fprintf(c, "the key and the value of token %d in the cache\n", i % 97);
    ck_assert_int_eq(fclose(c), 0);
    const char *train[] = {"train", "--corpus", corpus, "--steps", "2", "--warmup", "1", "--layers", "1",
                           "--heads", "2", "--dim", "16", "--ctx", "32", "--batch", "2", "--quiet",
                           "--out", "m", "--scripts", plots, NULL};
    ck_assert_int_eq(run_kvscope_at(dir, NULL, train, NULL, se), 0);
    snprintf(f, sizeof f, "%s/m/loss.png", dir);
    char *e = read_file(se, NULL);
    ck_assert_msg(nonempty(f), "no loss chart: %s", e);
    free(e);
    /* a FIFO as style.gp */
    ck_assert_int_eq(copy_scripts(plots, sc), 0);
    snprintf(f, sizeof f, "%s/style.gp", sc);
    ck_assert_int_eq(unlink(f), 0);
    ck_assert_int_eq(mkfifo(f, 0644), 0);
    const char *fifo[] = {"heads", TINY, "--quiet", "--out", "h2", "--scripts", sc, NULL};
    ck_assert_int_eq(run_kvscope_at(dir, NULL, fifo, NULL, se), 2);
    const char *n1[] = {"--scripts", "style.gp", "is a FIFO", NULL};
    free(one_line(se, n1));
    ck_assert_int_eq(unlink(f), 0);
    snprintf(f, sizeof f, "%s/style.gp", plots);
    char to[PATH_MAX + 16];
    snprintf(to, sizeof to, "%s/style.gp", sc);
    ck_assert_int_eq(link(f, to) == 0 || symlink(f, to) == 0, 1);
    /* an empty flops.gp */
    snprintf(f, sizeof f, "%s/flops.gp", sc);
    ck_assert_int_eq(write_text_file(f, ""), 0);
    const char *cmp[] = {"compare", TINY, "--lengths", "8", "--table-lengths", "none", "--decode-at", "8",
                         "--repeat", "1", "--out", "c", "--charts", "ch", "--scripts", sc, NULL};
    ck_assert_int_eq(run_kvscope_at(dir, NULL, cmp, so, se), 2);
    const char *n2[] = {"gnuplot wrote no ch/compare_flops.png", "flops.gp", NULL};
    free(one_line(se, n2));
    e = read_file(so, NULL);
    ck_assert_msg(e && !strstr(e, "wrote"), "%s", e);
    free(e);
    snprintf(f, sizeof f, "%s/ch", dir);
    ck_assert_int_eq(access(f, F_OK), -1);
    ck_assert_int_eq(count_prefixed("ch.tmp."), 0);
}
END_TEST

/* ---- the exit rule for the demonstrations ---------------------------------------------- */

/* 1 means logits that differ were found, for every command: verify --article-bug and
 * batch --no-mask (prompts of different lengths, so padding takes part) both exit 1,
 * and the same batch with its mask exits 0. batch --no-mask used to exit 0. */
START_TEST(test_demonstrations_exit_1) {
    char out[PATH_MAX], so[PATH_MAX];
    at(out, sizeof out, "b");
    at(so, sizeof so, "stdout");
    const char *bug[] = {"verify", TINY, "--steps", "3", "--quiet", "--article-bug", NULL};
    ck_assert_int_eq(run_kvscope(bug, so, NULL), 1);
    const char *masked[] = {"batch", TINY, "--prompt", "abc", "--prompt", "a", "--prompt", "abcdefg",
                            "--steps", "6,3,4", "--quiet", "--out", out, NULL};
    ck_assert_int_eq(run_kvscope(masked, so, NULL), 0);
    const char *nomask[] = {"batch", TINY, "--prompt", "abc", "--prompt", "a", "--prompt", "abcdefg",
                            "--steps", "6,3,4", "--quiet", "--no-mask", "--out", out, NULL};
    ck_assert_int_eq(run_kvscope(nomask, so, NULL), 1);
    char *h = read_file(so, NULL);
    ck_assert_msg(h && strstr(h, "WITHOUT mask") && strstr(h, "greedy token differs"), "%s", h);
    free(h);
    ck_assert_int_eq(count_entries(out), 6); /* the folder is written all the same */
}
END_TEST

Suite *make_outputs_suite(void) {
    Suite *s = suite_create("outputs");
    TCase *tc = tcase_create("outputs");
    tcase_set_tags(tc, "bin"); /* runs bin/kvscope: not in make test */
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    add_file_output_tests(tc);
    tcase_add_test(tc, test_refused_up_front);
    tcase_add_test(tc, test_force);
    tcase_add_test(tc, test_symlinked_out);
    tcase_add_test(tc, test_odd_input_files);
    tcase_add_test(tc, test_disk_full);
    tcase_add_test(tc, test_signal_keeps_old_out);
    tcase_add_test(tc, test_stale_siblings_removed);
    tcase_add_test(tc, test_exit_rule);
    tcase_add_test(tc, test_mount_inside_out);
    tcase_add_test(tc, test_passwd_home_refused);
    tcase_add_test(tc, test_chart_scripts);
    tcase_add_test(tc, test_demonstrations_exit_1);
    suite_add_tcase(s, tc);
    return s;
}
