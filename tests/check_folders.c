/* check_folders.c — whose folder an output folder is (issue 42), through bin/kvscope as
 * a user meets it: a command replaces only a folder its own command wrote; a model folder
 * only train or export replace, with --force; --force never reaches a system folder,
 * another user's or one git tracks; a user's file inside a kvscope folder survives the
 * next run. */
#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "outdir.h"
#include "testutil.h"

static char dir[1024]; /* a fresh folder per test, resolved (short: /tmp/...) */
static char se[PATH_MAX], so[PATH_MAX], home[PATH_MAX];

static void setup(void) {
    char t[64], r[PATH_MAX];
    ck_assert_ptr_nonnull(make_temp_dir(t, sizeof t));
    ck_assert_ptr_nonnull(realpath(t, r));
    ck_assert_uint_lt(strlen(r), sizeof dir);
    memcpy(dir, r, strlen(r) + 1);
    snprintf(se, sizeof se, "%s/stderr", dir);
    snprintf(so, sizeof so, "%s/stdout", dir);
    snprintf(home, sizeof home, "%s/home", dir);
    ck_assert_int_eq(mkdir(home, 0755), 0);
}

static void teardown(void) { remove_tree(dir); }

#define TINY "--layers", "1", "--heads", "2", "--dim", "16", "--vocab", "256"

static const char *at(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "%s/%s", dir, name);
    return buf;
}

/* kvscope run in dir with HOME=dir/home; stdout to so, stderr to se. */
static int kv(const char *const *args) { return run_kvscope_at(dir, home, args, so, se); }

/* stderr is one line "kvscope: ..." holding every needle (NULL-terminated). */
static void one_line(const char *const *needles) {
    char *e = read_file(se, NULL);
    ck_assert_ptr_nonnull(e);
    ck_assert_msg(strncmp(e, "kvscope: ", 9) == 0 && strchr(e, '\n') == e + strlen(e) - 1,
                  "not one kvscope: line: %s", e);
    for (int i = 0; needles[i]; i++) ck_assert_msg(strstr(e, needles[i]), "lacks \"%s\": %s", needles[i], e);
    free(e);
}

/* path's bytes equal the text. */
static void holds(const char *path, const char *text) {
    char *t = read_file(path, NULL);
    ck_assert_msg(t && strcmp(t, text) == 0, "%s: %s", path, t ? t : "(missing)");
    free(t);
}

/* ---- item 1: a folder belongs to the command that wrote it ---------------------------- */

/* The cases: a copy of a trained model given to kvmem or run, with or without
 * --force; export over it without --force. Each exits 2 with one line, the weights byte
 * for byte as they were; export --force replaces it. A Hugging Face folder (no marker)
 * the same. */
START_TEST(test_model_folder_kept) {
    char m[PATH_MAX], w[PATH_MAX + 32], copy[PATH_MAX];
    at(m, sizeof m, "m");
    at(copy, sizeof copy, "weights.copy");
    const char *ex[] = {"export", TINY, "--quiet", "--out", "m", NULL};
    ck_assert_int_eq(kv(ex), 0);
    snprintf(w, sizeof w, "%s/model.safetensors", m);
    char cmd[3 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", w, copy);
    ck_assert_int_eq(system(cmd), 0);
    for (int hf = 0; hf < 2; hf++) {
        if (hf) { /* a Hugging Face download: no marker */
            char mk[PATH_MAX + 32];
            snprintf(mk, sizeof mk, "%s/" OUTDIR_MARKER, m);
            ck_assert_int_eq(unlink(mk), 0);
        }
        const struct { const char *args[20]; const char *why; } cases[] = {
            {{"kvmem", "--preset", "gpt2", "--out", "m"}, "which only train or export replace"},
            {{"kvmem", "--preset", "gpt2", "--out", "m", "--force"}, "which only train or export replace"},
            {{"run", TINY, "--steps", "1", "--quiet", "--out", "m"}, "which only train or export replace"},
            {{"run", TINY, "--steps", "1", "--quiet", "--out", "m", "--force"}, "only with --force"},
            {{"budget", TINY, "--steps", "1", "--quiet", "--out", "m", "--force"}, "holds a model"},
            {{"export", TINY, "--quiet", "--out", "m"}, "add --force to replace it"},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            ck_assert_msg(kv(cases[i].args) == 2, "case %zu (hf %d) not refused", i, hf);
            const char *n[] = {"--out holds a model", cases[i].why, ": m\n", NULL};
            one_line(n);
            ck_assert_msg(files_equal(w, copy), "case %zu changed the weights", i);
            char *out = read_file(so, NULL);
            ck_assert_msg(out && out[0] == '\0', "case %zu printed before refusing: %s", i, out);
            free(out);
        }
    }
    const char *forced[] = {"export", TINY, "--seed", "2", "--quiet", "--out", "m", "--force", NULL};
    ck_assert_int_eq(kv(forced), 0);
    ck_assert_msg(!files_equal(w, copy), "export --force did not replace the model");
}
END_TEST

/* A folder of another command is refused without --force, naming the command that wrote
 * it; with --force it is replaced; its own command replaces it without. */
START_TEST(test_other_commands_folder) {
    char k[PATH_MAX], f[PATH_MAX + 32];
    at(k, sizeof k, "k");
    const char *km[] = {"kvmem", "--out", "k", NULL};
    ck_assert_int_eq(kv(km), 0);
    snprintf(f, sizeof f, "%s/kvmem.csv", k);
    const char *run[] = {"run", TINY, "--steps", "1", "--quiet", "--out", "k", NULL};
    ck_assert_int_eq(kv(run), 2);
    const char *n[] = {"--out is the --out folder of `kvscope kvmem`, not of `kvscope run`", "--force", NULL};
    one_line(n);
    ck_assert_int_eq(access(f, F_OK), 0);
    ck_assert_int_eq(kv(km), 0); /* its own command: no --force */
    const char *forced[] = {"run", TINY, "--steps", "1", "--quiet", "--out", "k", "--force", NULL};
    ck_assert_int_eq(kv(forced), 0);
    ck_assert_int_eq(access(f, F_OK), -1);
    snprintf(f, sizeof f, "%s/" OUTDIR_MARKER, k);
    char *mk = read_file(f, NULL);
    ck_assert_msg(mk && strncmp(mk, "kvscope run --out\n", 18) == 0, "%s", mk);
    free(mk);
}
END_TEST

/* ---- item 5: what --force never replaces ------------------------------------------------- */

/* A folder outside home, the current folder and /tmp (here one in /var/tmp, which is
 * none of them: the test's own, so a failure loses nothing else), also from "/" as the
 * current folder; as root, a folder of another user under /tmp. Refused with --force,
 * the file inside kept. */
START_TEST(test_force_not_system) {
    char base[64] = "/var/tmp/kvscope-sys.XXXXXX", victim[PATH_MAX], f[PATH_MAX + 32];
    if (!mkdtemp(base)) {
        TEST_SKIPPED("cannot create a folder in /var/tmp");
        return;
    }
    snprintf(victim, sizeof victim, "%s/etc", base);
    snprintf(f, sizeof f, "%s/passwd", victim);
    ck_assert_int_eq(mkdir(victim, 0755), 0);
    ck_assert_int_eq(write_text_file(f, "root:x:0:0"), 0);
    /* also from inside it (cd /etc; --out ssh), and with $HOME saying it is the home:
     * the current folder counts only when it is the user's, the home is the passwd one */
    const char *cwds[] = {dir, "/", base, base};
    for (int c = 0; c < 4; c++) {
        const char *km[] = {"kvmem", "--out", c == 2 ? "etc" : victim, "--force", NULL};
        int rc = run_kvscope_at(cwds[c], c == 3 ? base : home, km, so, se);
        char *kept = read_file(f, NULL);
        int same = kept && strcmp(kept, "root:x:0:0") == 0;
        free(kept);
        if (rc != 2 || !same) remove_tree(base); /* a failure leaves nothing in /var/tmp */
        ck_assert_msg(rc == 2 && same, "cwd %s: exit %d", cwds[c], rc);
        const char *n[] = {"is a system folder", "even with --force", c == 2 ? "etc" : victim, NULL};
        one_line(n);
    }
    remove_tree(base);
    if (geteuid() != 0) {
        TEST_SKIPPED("not root: a folder of another user");
        return;
    }
    at(victim, sizeof victim, "theirs");
    snprintf(f, sizeof f, "%s/thesis.tex", victim);
    ck_assert_int_eq(mkdir(victim, 0755), 0);
    ck_assert_int_eq(write_text_file(f, "chapter 1"), 0);
    ck_assert_int_eq(chown(victim, 1234, 1234), 0);
    const char *run[] = {"run", TINY, "--steps", "1", "--quiet", "--out", "theirs", "--force", NULL};
    ck_assert_int_eq(kv(run), 2);
    const char *n[] = {"--out belongs to another user", "even with --force", NULL};
    one_line(n);
    holds(f, "chapter 1");
}
END_TEST

/* In a git clone, `run --out src --force` is refused (it deleted 143 tracked files), a
 * folder git does not track is replaced with --force. */
START_TEST(test_force_not_git_tracked) {
    if (system("command -v git >/dev/null") != 0) {
        TEST_SKIPPED("no git here");
        return;
    }
    char clone[PATH_MAX], cmd[4 * PATH_MAX], f[2 * PATH_MAX];
    at(clone, sizeof clone, "clone");
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/src/cli' '%s/scratch' && cd '%s' && git init -q . && "
             "echo 'int main;' > src/cli/main.c && echo x > scratch/old.txt && git add src",
             clone, clone, clone);
    ck_assert_int_eq(system(cmd), 0);
    for (int deep = 0; deep < 2; deep++) {
        const char *out = deep ? "src/cli" : "src";
        const char *run[] = {"run", TINY, "--steps", "1", "--quiet", "--out", out, "--force", NULL};
        ck_assert_int_eq(run_kvscope_at(clone, home, run, so, se), 2);
        const char *n[] = {"holds files that git tracks", clone, "even with --force", NULL};
        one_line(n);
        snprintf(f, sizeof f, "%s/src/cli/main.c", clone);
        holds(f, "int main;\n");
    }
    const char *run[] = {"run", TINY, "--steps", "1", "--quiet", "--out", "scratch", "--force", NULL};
    ck_assert_int_eq(run_kvscope_at(clone, home, run, so, se), 0);
    snprintf(f, sizeof f, "%s/scratch/old.txt", clone);
    ck_assert_int_eq(access(f, F_OK), -1);
}
END_TEST


/* ---- item 4: a user's file inside a kvscope folder survives the next run --------------- */

/* The case, `run --out r; echo mine > r/NOTES.md; run --out r`, and a folder of
 * the user's, a file of theirs inside kvscope's heatmaps/, the same for kvmem and for
 * run --force over kvmem's folder: each is carried into the new folder, named in one
 * note on stderr; kvscope's own files are the new run's. */
START_TEST(test_user_files_survive) {
    char f[PATH_MAX + 64];
    const char *run[] = {"run", TINY, "--steps", "2", "--quiet", "--heatmaps", "--out", "r", NULL};
    ck_assert_int_eq(kv(run), 0);
    ck_assert_int_eq(write_text_file(at(f, sizeof f, "r/NOTES.md"), "mine"), 0);
    ck_assert_int_eq(mkdir(at(f, sizeof f, "r/drafts"), 0755), 0);
    ck_assert_int_eq(write_text_file(at(f, sizeof f, "r/drafts/a.txt"), "draft"), 0);
    ck_assert_int_eq(write_text_file(at(f, sizeof f, "r/heatmaps/look.txt"), "see L0"), 0);
    /* kvscope's tokens.csv, edited: the user's now, and in the way of the new one */
    ck_assert_int_eq(write_text_file(at(f, sizeof f, "r/tokens.csv"), "edited"), 0);
    const char *again[] = {"run", TINY, "--steps", "3", "--quiet", "--heatmaps", "--out", "r", NULL};
    ck_assert_int_eq(kv(again), 2);
    const char *nt[] = {"holds tokens.csv, which kvscope did not write", NULL};
    one_line(nt);
    holds(at(f, sizeof f, "r/tokens.csv"), "edited");
    ck_assert_int_eq(unlink(f), 0);
    /* a folder where kvscope wrote a file is the user's too */
    ck_assert_int_eq(mkdir(f, 0755), 0);
    ck_assert_int_eq(write_text_file(at(f, sizeof f, "r/tokens.csv/mine.txt"), "mine"), 0);
    ck_assert_int_eq(kv(again), 2);
    one_line(nt);
    holds(f, "mine");
    ck_assert_int_eq(unlink(f), 0);
    ck_assert_int_eq(rmdir(at(f, sizeof f, "r/tokens.csv")), 0);
    ck_assert_int_eq(kv(again), 0);
    holds(at(f, sizeof f, "r/NOTES.md"), "mine");
    holds(at(f, sizeof f, "r/drafts/a.txt"), "draft");
    holds(at(f, sizeof f, "r/heatmaps/look.txt"), "see L0");
    char *t = read_file(at(f, sizeof f, "r/tokens.csv"), NULL);
    ck_assert_msg(t && strncmp(t, "step,", 5) == 0, "tokens.csv is not the new run's: %s", t);
    free(t);
    ck_assert_int_eq(access(at(f, sizeof f, "r/heatmaps/decode_s003_step_L0_H00.png"), F_OK), 0);
    const char *n[] = {"note: --out: kept", "NOTES.md", "drafts", "heatmaps/look.txt", ": r\n", NULL};
    one_line(n);
    /* a run without heatmaps keeps the user's file in a heatmaps/ of its own; the next run
     * with heatmaps looks into it rather than taking it for the user's */
    const char *plain[] = {"run", TINY, "--steps", "1", "--quiet", "--out", "r", NULL};
    ck_assert_int_eq(kv(plain), 0);
    ck_assert_int_eq(access(at(f, sizeof f, "r/heatmaps/decode_s003_step_L0_H00.png"), F_OK), -1);
    ck_assert_int_eq(kv(again), 0);
    holds(at(f, sizeof f, "r/heatmaps/look.txt"), "see L0");
    ck_assert_int_eq(count_entries(dir), 4); /* home, r, stdout, stderr: nothing beside r */
    /* kvmem, and run --force over kvmem's folder */
    const char *km[] = {"kvmem", "--out", "k", NULL};
    ck_assert_int_eq(kv(km), 0);
    ck_assert_int_eq(write_text_file(at(f, sizeof f, "k/NOTES.md"), "kv notes"), 0);
    ck_assert_int_eq(kv(km), 0);
    holds(at(f, sizeof f, "k/NOTES.md"), "kv notes");
    const char *forced[] = {"run", TINY, "--steps", "1", "--quiet", "--out", "k", "--force", NULL};
    ck_assert_int_eq(kv(forced), 0);
    holds(at(f, sizeof f, "k/NOTES.md"), "kv notes");
    ck_assert_int_eq(access(at(f, sizeof f, "k/kvmem.csv"), F_OK), -1);
}
END_TEST

/* A user's file with the name of a file this run writes (logits.csv, which the last run
 * did not write): refused with one line naming it, after the run, nothing replaced. */
START_TEST(test_user_file_in_the_way) {
    char f[PATH_MAX + 64], kvm[PATH_MAX + 64];
    const char *run[] = {"run", TINY, "--steps", "1", "--quiet", "--out", "r", NULL};
    ck_assert_int_eq(kv(run), 0);
    char *was = read_file(at(kvm, sizeof kvm, "r/kv_memory.csv"), NULL);
    ck_assert_ptr_nonnull(was);
    ck_assert_int_eq(write_text_file(at(f, sizeof f, "r/logits.csv"), "my logits"), 0);
    const char *logits[] = {"run", TINY, "--steps", "4", "--quiet", "--logits", "--out", "r", NULL};
    ck_assert_int_eq(kv(logits), 2);
    const char *n[] = {"--out holds logits.csv, which kvscope did not write", "nothing replaced", ": r\n", NULL};
    one_line(n);
    holds(f, "my logits");
    holds(kvm, was);
    free(was);
    ck_assert_int_eq(count_entries(dir), 4);
}
END_TEST

/* A pid that no longer runs: a child that has exited and been reaped. */
static long dead_pid(void) {
    pid_t p = fork();
    ck_assert_int_ge(p, 0);
    if (p == 0) _exit(0);
    ck_assert_int_eq(waitpid(p, NULL, 0), p);
    return (long)p;
}

/* kill -9 between carrying the user's files into the new folder and the swap leaves them
 * in r.tmp.<pid>.*: the next run moves them back (and on into its folder) rather than
 * removing that folder; one it cannot move back (r has a file of that name) stays, and
 * the leftover is named on stderr. */
START_TEST(test_killed_carry_rescued) {
    char f[2 * PATH_MAX], stale[PATH_MAX + 64], name[64];
    const char *run[] = {"run", TINY, "--steps", "1", "--quiet", "--out", "r", NULL};
    ck_assert_int_eq(kv(run), 0);
    for (int clash = 0; clash < 2; clash++) {
        snprintf(name, sizeof name, "r.tmp.%ld.Ab%dxyz", dead_pid(), clash);
        at(stale, sizeof stale, name);
        ck_assert_int_eq(mkdir(stale, 0755), 0);
        snprintf(f, sizeof f, "%s/" OUTDIR_MARKER, stale);
        ck_assert_int_eq(write_text_file(f, "kvscope run --out\n\nwritten:\nkv_memory.csv\n"), 0);
        snprintf(f, sizeof f, "%s/kv_memory.csv", stale);
        ck_assert_int_eq(write_text_file(f, "step,bytes\n"), 0);
        snprintf(f, sizeof f, "%s/NOTES.md", stale);
        ck_assert_int_eq(write_text_file(f, "carried"), 0);
        if (clash) ck_assert_int_eq(write_text_file(at(f, sizeof f, "r/NOTES.md"), "newer"), 0);
        ck_assert_int_eq(kv(run), 0);
        char *e = read_file(se, NULL);
        ck_assert_ptr_nonnull(e);
        holds(at(f, sizeof f, "r/NOTES.md"), clash ? "newer" : "carried");
        if (!clash) {
            ck_assert_int_eq(access(stale, F_OK), -1);
        } else {
            snprintf(f, sizeof f, "%s/NOTES.md", stale);
            holds(f, "carried");
            ck_assert_msg(strstr(e, "kvscope: note: cannot remove what a killed run left") &&
                          strstr(e, name) && strstr(e, "holds files kvscope did not write"), "%s", e);
        }
        free(e);
    }
}
END_TEST

/* ---- item 6: temporaries of every command ------------------------------------------------ */

/* A killed `format FILE` leaves FILE.tmp.<pid>.*: the next format of FILE removes those of
 * dead runs, not one of a live run, nor a file of another name. */
START_TEST(test_format_temporaries) {
    char f[PATH_MAX], dead[PATH_MAX + 64], live[PATH_MAX + 64], other[PATH_MAX + 64];
    at(f, sizeof f, "t.md");
    ck_assert_int_eq(write_text_file(f, "{{digits 1234}}\n"), 0);
    snprintf(dead, sizeof dead, "%s.tmp.%ld.Qw3rty", f, dead_pid());
    snprintf(live, sizeof live, "%s.tmp.%ld.Qw3rty", f, (long)getpid());
    snprintf(other, sizeof other, "%s/u.md.tmp.%ld.Qw3rty", dir, dead_pid());
    ck_assert_int_eq(write_text_file(dead, "half"), 0);
    ck_assert_int_eq(write_text_file(live, "busy"), 0);
    ck_assert_int_eq(write_text_file(other, "theirs"), 0);
    const char *fmt[] = {"format", f, NULL};
    ck_assert_int_eq(kv(fmt), 0);
    holds(f, "1,234\n");
    ck_assert_int_eq(access(dead, F_OK), -1);
    holds(live, "busy");
    holds(other, "theirs");
}
END_TEST

/* `run --out prev > /dev/full` (and kvmem's table): exit 2 with one line about stdout,
 * the previous folder as it was, nothing beside it. prev was replaced before. */
START_TEST(test_stdout_full_keeps_prev) {
    struct stat st;
    if (stat("/dev/full", &st) != 0 || !S_ISCHR(st.st_mode)) {
        TEST_SKIPPED("no /dev/full here");
        return;
    }
    char f[PATH_MAX + 32];
    const char *first[] = {"run", TINY, "--steps", "1", "--out", "prev", NULL};
    ck_assert_int_eq(kv(first), 0);
    char *was = read_file(at(f, sizeof f, "prev/tokens.csv"), NULL);
    ck_assert_ptr_nonnull(was);
    const char *again[] = {"run", TINY, "--steps", "4", "--out", "prev", NULL};
    ck_assert_int_eq(run_kvscope_at(dir, home, again, "/dev/full", se), 2);
    const char *n[] = {"kvscope: cannot write (No space left on device): stdout", NULL};
    one_line(n);
    holds(f, was);
    free(was);
    const char *km[] = {"kvmem", "--out", "k", NULL};
    ck_assert_int_eq(run_kvscope_at(dir, home, km, "/dev/full", se), 2);
    one_line(n);
    ck_assert_int_eq(access(at(f, sizeof f, "k"), F_OK), -1);
    ck_assert_int_eq(count_entries(dir), 4); /* home, prev, stdout, stderr */
}
END_TEST

/* A closed stdout (`kvscope info >&-`) is said to be closed, not a full disk. */
START_TEST(test_closed_stdout) {
    const char *argv[] = {"info", NULL};
    char bin[PATH_MAX];
    ck_assert_ptr_nonnull(realpath(KVSCOPE_BIN, bin));
    fflush(NULL);
    pid_t p = fork();
    ck_assert_int_ge(p, 0);
    if (p == 0) {
        int e = open(se, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(e, 2);
        close(1);
        execl(bin, bin, argv[0], (char *)NULL);
        _exit(127);
    }
    int st;
    ck_assert_int_eq(waitpid(p, &st, 0), p);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2);
    char *e = read_file(se, NULL);
    ck_assert_msg(e && strcmp(e, "kvscope: cannot write (it is closed, or not open for writing): stdout\n") == 0,
                  "%s", e);
    free(e);
}
END_TEST

/* 1 if a tmpfs of size (e.g. "3m") could be mounted at path (root only). */
static int small_disk(const char *path, const char *size) {
    char cmd[PATH_MAX + 96];
    if (mkdir(path, 0755) != 0) return 0;
    snprintf(cmd, sizeof cmd, "mount -t tmpfs -o size=%s tmpfs '%s' 2>/dev/null", size, path);
    return system(cmd) == 0;
}

static void unmount(const char *path) {
    char cmd[PATH_MAX + 32];
    snprintf(cmd, sizeof cmd, "umount '%s'", path);
    ck_assert_int_eq(system(cmd), 0);
}

/* On a 3 MiB disk: a run whose attention.csv cannot fit is refused before it starts,
 * naming the size; one the estimate cannot bound (a window) stops at the first failed
 * write — far fewer decode lines than --steps — not after computing every step. */
START_TEST(test_full_disk_at_once) {
    char small[PATH_MAX], out[PATH_MAX + 8];
    at(small, sizeof small, "small");
    if (!small_disk(small, "3m")) {
        TEST_SKIPPED("cannot mount a small tmpfs here (needs root)");
        return;
    }
    snprintf(out, sizeof out, "%s/o", small);
    const char *big[] = {"run", TINY, "--ctx", "1024", "--steps", "1000", "--record", "all", "--out", out, NULL};
    int rc1 = kv(big);
    char *o1 = read_file(so, NULL), *e1 = read_file(se, NULL);
    const char *win[] = {"run", TINY, "--ctx", "1024", "--steps", "1000", "--record", "all", "--window", "256",
                         "--out", out, NULL};
    int rc2 = kv(win);
    char *o2 = read_file(so, NULL), *e2 = read_file(se, NULL);
    int left = count_entries(small);
    unmount(small);
    ck_assert_int_eq(rc1, 2);
    ck_assert_msg(e1 && strstr(e1, "--out: the run's files need at least") && strstr(e1, "rows of at least 24 bytes") &&
                  strstr(e1, "free on its disk"), "%s", e1);
    ck_assert_msg(o1 && o1[0] == '\0', "the refused run printed: %s", o1);
    ck_assert_int_eq(rc2, 2);
    ck_assert_msg(e2 && strstr(e2, "kvscope: --out: cannot write (No space left on device): ") &&
                  !strstr(e2, "memory"), "%s", e2);
    int decodes = 0;
    for (const char *p = o2; p && (p = strstr(p, "\ndecode ")); p++) decodes++;
    ck_assert_msg(decodes < 500, "%d of 1000 steps computed after the disk was full", decodes);
    ck_assert_int_eq(left, 0);
    free(o1), free(e1), free(o2), free(e2);
}
END_TEST

/* ---- item 7 --------------------------------------------------------------------------- */

/* verify --csv newf/ names a folder: refused, no file newf; verify --quiet prints
 * nothing (its exit status is the result). */
START_TEST(test_verify_csv_and_quiet) {
    char f[PATH_MAX + 16];
    const char *slash[] = {"verify", TINY, "--steps", "1", "--csv", "newf/", NULL};
    ck_assert_int_eq(kv(slash), 2);
    const char *n[] = {"--csv names a file, but ends with / as a folder does", "newf/", NULL};
    one_line(n);
    ck_assert_int_eq(access(at(f, sizeof f, "newf"), F_OK), -1);
    const char *quiet[] = {"verify", TINY, "--steps", "2", "--quiet", NULL};
    ck_assert_int_eq(kv(quiet), 0);
    holds(so, "");
    const char *loud[] = {"verify", TINY, "--steps", "2", NULL};
    ck_assert_int_eq(kv(loud), 0);
    char *o = read_file(so, NULL);
    ck_assert_msg(o && strstr(o, "cache vs recompute: max |dlogit| over 2 steps"), "%s", o);
    free(o);
}
END_TEST

/* Chart scripts come from kvscope's install, not the current folder: a ./plots/heads.gp
 * that runs a command is not run (heads draws with the install's), a copy of the binary
 * with no plots/ beside it asks for --scripts; a script folder without the style.gp its
 * script loads is refused before any work; a script that loops is stopped at the time
 * limit. */
START_TEST(test_chart_scripts_found) {
    char plots[PATH_MAX], f[2 * PATH_MAX], bin[PATH_MAX], cmd[4 * PATH_MAX];
    if (!realpath("plots", plots) || system("command -v gnuplot >/dev/null && "
                                            "command -v pdftocairo >/dev/null") != 0) {
        TEST_SKIPPED("gnuplot or pdftocairo missing, or not run from the repository root");
        return;
    }
    ck_assert_int_eq(mkdir(at(f, sizeof f, "plots"), 0755), 0);
    snprintf(cmd, sizeof cmd, "cp '%s/style.gp' '%s/publish.sh' '%s/plots/' && "
             "printf 'system(\"touch %s/pwned\")\\n' > '%s/plots/heads.gp'", plots, plots, dir, dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    const char *heads[] = {"heads", TINY, "--quiet", "--out", "h", NULL};
    ck_assert_int_eq(kv(heads), 0);
    ck_assert_int_eq(access(at(f, sizeof f, "pwned"), F_OK), -1);
    ck_assert_int_eq(access(at(f, sizeof f, "h/heads.png"), F_OK), 0);
    /* a copy of the binary with nothing beside it */
    ck_assert_ptr_nonnull(realpath(KVSCOPE_BIN, bin));
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/b/c/d' && cp '%s' '%s/b/c/d/kvscope' && cd '%s' && "
             "b/c/d/kvscope heads --layers 1 --heads 2 "
             "--dim 16 --vocab 256 --quiet --out h2 2> '%s'; test $? = 2", dir, bin, dir, dir, se);
    ck_assert_int_eq(system(cmd), 0);
    const char *n1[] = {"chart scripts are not beside its binary", "--scripts DIR", "/b/c/d/../plots", NULL};
    one_line(n1);
    /* style.gp missing: refused up front, nothing printed, no folder */
    ck_assert_int_eq(mkdir(at(f, sizeof f, "sc"), 0755), 0);
    snprintf(cmd, sizeof cmd, "cp '%s/heads.gp' '%s/sc/'", plots, dir);
    ck_assert_int_eq(system(cmd), 0);
    const char *nostyle[] = {"heads", TINY, "--out", "h3", "--scripts", "sc", NULL};
    ck_assert_int_eq(kv(nostyle), 2);
    const char *n2[] = {"--scripts: sc/style.gp: missing (sc/heads.gp needs it)", NULL};
    one_line(n2);
    holds(so, "");
    /* a loop: stopped at the time limit (1 s here) with a line saying so */
    snprintf(cmd, sizeof cmd, "cp '%s/style.gp' '%s/publish.sh' '%s/sc/' && "
             "printf 'while (1) { a = 1 }\\n' > '%s/sc/heads.gp'", plots, plots, dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(setenv("KVSCOPE_GNUPLOT_SECONDS", "1", 1), 0);
    const char *loop[] = {"heads", TINY, "--quiet", "--out", "h4", "--scripts", "sc", NULL};
    int rc = kv(loop);
    unsetenv("KVSCOPE_GNUPLOT_SECONDS");
    ck_assert_int_eq(rc, 2);
    const char *n3[] = {"gnuplot on sc/heads.gp was still running after 1 s, its time limit", ": h4\n", NULL};
    one_line(n3);
    ck_assert_int_eq(access(at(f, sizeof f, "h4"), F_OK), -1);
}
END_TEST

/* ---- the adversarial round: models never lost --------------------------------------- */

/* No file output replaces a file of a model folder, --force or not: verify --csv, run
 * --html over model.safetensors or config.json exit 2 with one line, the bytes kept. */
START_TEST(test_model_files_never_replaced) {
    char w[PATH_MAX], copy[PATH_MAX], cmd[3 * PATH_MAX];
    const char *ex[] = {"export", TINY, "--quiet", "--out", "mm", NULL};
    ck_assert_int_eq(kv(ex), 0);
    at(w, sizeof w, "mm/model.safetensors");
    at(copy, sizeof copy, "weights.copy");
    snprintf(cmd, sizeof cmd, "cp '%s' '%s' && cp '%s/mm/config.json' '%s/config.copy'", w, copy, dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    const char *v[] = {"verify", TINY, "--steps", "1", "--csv", "mm/model.safetensors", "--force", NULL};
    const char *r1[] = {"run", TINY, "--steps", "1", "--quiet", "--html", "mm/model.safetensors", "--force", NULL};
    const char *r2[] = {"run", TINY, "--steps", "1", "--quiet", "--html", "mm/config.json", "--force", NULL};
    const char *const *all[] = {v, r1, r2};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(kv(all[i]), 2);
        const char *n[] = {"a file of a model folder", "even with --force", NULL};
        one_line(n);
    }
    ck_assert(files_equal(w, copy));
    char c1[PATH_MAX], c2[PATH_MAX];
    ck_assert(files_equal(at(c1, sizeof c1, "mm/config.json"), at(c2, sizeof c2, "config.copy")));
}
END_TEST

/* A folder that holds a model at any depth is never replaced, --force or not, by any
 * command (kvmem, run, export): the line names the model folder. */
START_TEST(test_folder_holding_models) {
    char cmd[3 * PATH_MAX], w[PATH_MAX], copy[PATH_MAX];
    const char *ex[] = {"export", TINY, "--quiet", "--out", "models/x/a", NULL};
    ck_assert_int_eq(kv(ex), 2); /* the folder it goes in does not exist */
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/models/x'", dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(kv(ex), 0);
    at(w, sizeof w, "models/x/a/model.safetensors");
    at(copy, sizeof copy, "weights.copy");
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", w, copy);
    ck_assert_int_eq(system(cmd), 0);
    const char *km[] = {"kvmem", "--preset", "gpt2", "--out", "models", "--force", NULL};
    const char *rn[] = {"run", TINY, "--steps", "1", "--quiet", "--out", "models", "--force", NULL};
    const char *e2[] = {"export", TINY, "--quiet", "--out", "models", "--force", NULL};
    const char *const *all[] = {km, rn, e2};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(kv(all[i]), 2);
        const char *n[] = {"holds a model folder", "models/x/a", NULL};
        one_line(n);
        ck_assert(files_equal(w, copy));
    }
}
END_TEST

/* Weights are told by their extension, in any case, beside config.json: each such
 * folder is refused to kvmem --force as a model. */
START_TEST(test_model_weights_by_extension) {
    static const char *const names[] = {
        "model-00001-of-00002.safetensors", "model.bin", "model.pt", "model.gguf",
        "consolidated.00.pth", "adapter_model.safetensors", "MODEL.SAFETENSORS", "tf.H5",
        "flax.msgpack", "last.ckpt",
    };
    char d[PATH_MAX], f[2 * PATH_MAX];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(d, sizeof d, "%s/m%zu", dir, i);
        ck_assert_int_eq(mkdir(d, 0755), 0);
        snprintf(f, sizeof f, "%s/config.json", d);
        ck_assert_int_eq(write_text_file(f, "{}"), 0);
        snprintf(f, sizeof f, "%s/%s", d, names[i]);
        ck_assert_int_eq(write_text_file(f, "weights"), 0);
        const char *km[] = {"kvmem", "--preset", "gpt2", "--out", d, "--force", NULL};
        ck_assert_msg(kv(km) == 2, "%s not taken for a model", names[i]);
        const char *n[] = {"holds a model", NULL};
        one_line(n);
        holds(f, "weights");
    }
    /* config.json beside a text file is no model: --force replaces it */
    snprintf(d, sizeof d, "%s/notes", dir);
    ck_assert_int_eq(mkdir(d, 0755), 0);
    snprintf(f, sizeof f, "%s/config.json", d);
    ck_assert_int_eq(write_text_file(f, "{}"), 0);
    snprintf(f, sizeof f, "%s/binary.txt", d);
    ck_assert_int_eq(write_text_file(f, "x"), 0);
    const char *km[] = {"kvmem", "--preset", "gpt2", "--out", d, "--force", NULL};
    ck_assert_int_eq(kv(km), 0);
}
END_TEST

/* `run | head -c 10`: SIGPIPE ends the run (status 141) and its temporary folder goes
 * with it, at once, not at the next run. */
START_TEST(test_sigpipe_cleans) {
    char bin[PATH_MAX];
    ck_assert_ptr_nonnull(realpath(KVSCOPE_BIN, bin));
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        signal(SIGPIPE, SIG_DFL);
        close(p[0]); /* no reader: the first write raises SIGPIPE */
        dup2(p[1], 1);
        int e = open(se, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(e, 2);
        if (chdir(dir) != 0 || setenv("HOME", home, 1) != 0) _exit(126);
        execl(bin, bin, "run", TINY, "--steps", "4", "--out", "r", (char *)NULL);
        _exit(127);
    }
    close(p[0]);
    close(p[1]);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    char *e = read_file(se, NULL);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGPIPE, "status %d: %s", st, e ? e : "");
    free(e);
    ck_assert_int_eq(count_entries(dir), 2); /* home/ and stderr: no r, no r.tmp.* */
}
END_TEST

/* export, heads, loss, kvvalues and compare print their summary before the swap: with
 * stdout on /dev/full each exits 2 and the previous folder stays (the same inode). */
START_TEST(test_stdout_full_five_commands) {
    char t[PATH_MAX], e[PATH_MAX];
    ck_assert_int_eq(write_text_file(at(t, sizeof t, "t.txt"), "the cat sat on the mat. the cat sat."), 0);
    at(e, sizeof e, "e");
    static const char *const cmds[] = {"export", "heads", "loss", "kvvalues", "compare"};
    for (int i = 0; i < 5; i++) {
        const int text = i == 2 || i == 3;
        const char *first[] = {cmds[i], TINY, "--out", "e", "--quiet", text ? "--text" : NULL, "t.txt", NULL};
        ck_assert_msg(kv(first) == 0, "%s", cmds[i]);
        struct stat before, after;
        ck_assert_int_eq(stat(e, &before), 0);
        const char *again[] = {cmds[i], TINY, "--out", "e", "--force", text ? "--text" : NULL, "t.txt", NULL};
        ck_assert_int_eq(run_kvscope_at(dir, home, again, "/dev/full", se), 2);
        const char *n[] = {"No space left on device", "stdout", NULL};
        one_line(n);
        ck_assert_int_eq(stat(e, &after), 0);
        ck_assert_msg(before.st_ino == after.st_ino, "%s replaced e", cmds[i]);
        ck_assert_int_eq(remove_tree(e), 0);
        ck_assert_int_eq(count_entries(dir), 4); /* home, t.txt, stderr, stdout: no e.tmp.* */
    }
}
END_TEST

/* run --plots and compare --out keep the user's file with the same note as run --out. */
START_TEST(test_kept_note_plots_compare) {
    char f[PATH_MAX];
    const char *r[] = {"run", TINY, "--steps", "2", "--quiet", "--heatmaps", "--out", "r", "--plots", "pp", NULL};
    const char *c[] = {"compare", TINY, "--quiet", "--out", "cc", NULL};
    const char *const *all[] = {r, c};
    const char *names[] = {"pp", "cc"}, *opts[] = {"note: --plots: kept NOTES.md", "note: --out: kept NOTES.md"};
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(kv(all[i]), 0);
        char rel[32];
        snprintf(rel, sizeof rel, "%s/NOTES.md", names[i]);
        ck_assert_int_eq(write_text_file(at(f, sizeof f, rel), "mine"), 0);
        ck_assert_int_eq(kv(all[i]), 0);
        holds(f, "mine");
        const char *n[] = {opts[i], names[i], NULL};
        one_line(n);
    }
}
END_TEST

Suite *make_folders_suite(void) {
    Suite *s = suite_create("folders");
    TCase *tc = tcase_create("folders");
    tcase_set_tags(tc, "bin"); /* runs bin/kvscope: not in make test */
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_model_folder_kept);
    tcase_add_test(tc, test_other_commands_folder);
    tcase_add_test(tc, test_force_not_system);
    tcase_add_test(tc, test_force_not_git_tracked);
    tcase_add_test(tc, test_user_files_survive);
    tcase_add_test(tc, test_user_file_in_the_way);
    tcase_add_test(tc, test_killed_carry_rescued);
    tcase_add_test(tc, test_format_temporaries);
    tcase_add_test(tc, test_stdout_full_keeps_prev);
    tcase_add_test(tc, test_closed_stdout);
    tcase_add_test(tc, test_full_disk_at_once);
    tcase_add_test(tc, test_verify_csv_and_quiet);
    tcase_add_test(tc, test_chart_scripts_found);
    tcase_add_test(tc, test_model_files_never_replaced);
    tcase_add_test(tc, test_folder_holding_models);
    tcase_add_test(tc, test_model_weights_by_extension);
    tcase_add_test(tc, test_sigpipe_cleans);
    tcase_add_test(tc, test_stdout_full_five_commands);
    tcase_add_test(tc, test_kept_note_plots_compare);
    suite_add_tcase(s, tc);
    return s;
}
