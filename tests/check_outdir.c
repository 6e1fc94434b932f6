/* check_outdir.c — output folders and input files as a library: resolved paths, the
 * folders kvscope may not replace, the marker, both commits, what killed runs left,
 * signal cleanup, the files of a folder and the one atomic-file writer, and input files
 * that are not regular. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "infile.h"
#include "outdir.h"
#include "outfolder.h"
#include "rmtree.h"
#include "testutil.h"

static char dir[1024]; /* a fresh folder per test, resolved (short: /tmp/...) */
static char err[8400];

static void setup(void) {
    char t[64], r[PATH_MAX];
    ck_assert_ptr_nonnull(make_temp_dir(t, sizeof t));
    ck_assert_ptr_nonnull(realpath(t, r));
    ck_assert_uint_lt(strlen(r), sizeof dir);
    memcpy(dir, r, strlen(r) + 1);
}

static void teardown(void) { remove_tree(dir); }

/* dir/name into buf. */
static const char *at(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "%s/%s", dir, name);
    return buf;
}

static int exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

/* A pid that no longer runs: a child that has exited and been reaped. */
static long dead_pid(void) {
    pid_t p = fork();
    ck_assert_int_ge(p, 0);
    if (p == 0) _exit(0);
    ck_assert_int_eq(waitpid(p, NULL, 0), p);
    return (long)p;
}

/* ---- paths ---------------------------------------------------------------- */

START_TEST(test_path_resolve) {
    char p[PATH_MAX], want[PATH_MAX + 64], a[PATH_MAX];
    ck_assert_int_eq(chdir(dir), 0);
    ck_assert_int_eq(mkdir("d", 0755), 0);
    ck_assert_int_eq(symlink("d", "link"), 0);
    ck_assert_int_eq(path_resolve("d", p, sizeof p), 0);
    snprintf(want, sizeof want, "%s/d", dir);
    ck_assert_str_eq(p, want);
    /* "." and ".." through a symlink, a trailing slash, a tail that does not exist */
    ck_assert_int_eq(path_resolve("./link/", p, sizeof p), 0);
    ck_assert_str_eq(p, want);
    ck_assert_int_eq(path_resolve("link/new/../x", p, sizeof p), 0);
    snprintf(want, sizeof want, "%s/d/x", dir);
    ck_assert_str_eq(p, want);
    ck_assert_int_eq(path_resolve("no/such/../../d", p, sizeof p), 0);
    snprintf(want, sizeof want, "%s/d", dir);
    ck_assert_str_eq(p, want);
    ck_assert_int_eq(path_resolve(at(a, sizeof a, "d/../.."), p, sizeof p), 0);
    char up[PATH_MAX];
    snprintf(up, sizeof up, "%s", dir);
    *strrchr(up, '/') = '\0';
    ck_assert_str_eq(p, up[0] ? up : "/");
    ck_assert_int_eq(path_resolve("/", p, sizeof p), 0);
    ck_assert_str_eq(p, "/");
    ck_assert_int_eq(path_resolve("//..//", p, sizeof p), 0);
    ck_assert_str_eq(p, "/");
}
END_TEST

/* The folders no output may be, even with --force, however they are spelled. */
START_TEST(test_forbidden_folders) {
    OutDir o;
    char home[PATH_MAX + 16], work[PATH_MAX + 16];
    snprintf(home, sizeof home, "%s/h", dir);
    ck_assert_int_eq(mkdir(home, 0755), 0);
    snprintf(home, sizeof home, "%s/h/home", dir);
    snprintf(work, sizeof work, "%s/w", dir);
    ck_assert_int_eq(mkdir(home, 0755), 0);
    ck_assert_int_eq(mkdir(work, 0755), 0);
    ck_assert_int_eq(setenv("HOME", home, 1), 0);
    ck_assert_int_eq(chdir(work), 0);
    ck_assert_int_eq(symlink(".", "self"), 0);
    ck_assert_int_eq(symlink("../h/home", "myhome"), 0);
    static const struct { const char *path, *why; } cases[] = {
        {".", "is the current folder"},      {"./", "is the current folder"},
        {"self", "is the current folder"},   {"..", "holds the current folder"},
        {"../w/..", "holds the current folder"}, {"/", "is the root folder"},
        {"myhome", "is your home folder"},   {"../h/home/", "is your home folder"},
        {"../h", "holds your home folder"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (unsigned force = 0; force <= OUTDIR_FORCE; force += OUTDIR_FORCE) {
            ck_assert_int_eq(outdir_check(&o, cases[i].path, "run", "--out", force, err, sizeof err), -1);
            ck_assert_msg(strstr(err, cases[i].why) && strncmp(err, "--out ", 6) == 0, "%s: %s",
                          cases[i].path, err);
        }
    }
    ck_assert_int_eq(outdir_check(&o, work, "run", "--plots", OUTDIR_FORCE, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "--plots is the current folder") && strstr(err, work), "%s", err);
    /* a folder beside them is fine */
    ck_assert_int_eq(outdir_check(&o, "out", "run", "--out", 0, err, sizeof err), 0);
    ck_assert_int_eq(outdir_check(&o, "../h/other", "run", "--out", 0, err, sizeof err), 0);
}
END_TEST

START_TEST(test_overlap_and_holds) {
    OutDir a, b;
    char p1[PATH_MAX + 16], p2[PATH_MAX + 16];
    ck_assert_int_eq(chdir(dir), 0);
    ck_assert_int_eq(outdir_check(&a, "k", "run", "--out", 0, err, sizeof err), 0);
    const char *inside[] = {"./k", "k/", "k/p", "k/../k/q/r"};
    for (size_t i = 0; i < sizeof inside / sizeof inside[0]; i++) {
        ck_assert_int_eq(outdir_check(&b, inside[i], "run", "--plots", OUTDIR_PARENTS, err, sizeof err), 0);
        ck_assert_msg(outdir_overlap(&a, &b) && outdir_overlap(&b, &a), "%s", inside[i]);
    }
    snprintf(p1, sizeof p1, "%s/k/p", dir);
    ck_assert_int_eq(outdir_check(&b, p1, "run", "--plots", OUTDIR_PARENTS, err, sizeof err), 0);
    ck_assert(outdir_overlap(&a, &b));
    ck_assert_int_eq(outdir_check(&b, "kk", "run", "--plots", 0, err, sizeof err), 0);
    ck_assert(!outdir_overlap(&a, &b)); /* a shared prefix of the name is not inside */
    snprintf(p2, sizeof p2, "%s/k/model", dir);
    ck_assert(outdir_holds(&a, p2));
    ck_assert(!outdir_holds(&a, "kk/model"));
}
END_TEST

/* ---- which folders may be replaced ----------------------------------------- */

START_TEST(test_marker_rules) {
    OutDir o;
    char d[PATH_MAX + 16], f[PATH_MAX + 64];
    at(d, sizeof d, "mine");
    ck_assert_int_eq(mkdir(d, 0755), 0);
    ck_assert_int_eq(outdir_check(&o, d, "run", "--out", 0, err, sizeof err), 0); /* empty */
    snprintf(f, sizeof f, "%s/thesis.tex", d);
    ck_assert_int_eq(write_text_file(f, "x"), 0);
    ck_assert_int_eq(outdir_check(&o, d, "run", "--out", 0, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "kvscope did not write") && strstr(err, "--force") && strstr(err, d), "%s", err);
    ck_assert_int_eq(outdir_check(&o, d, "run", "--out", OUTDIR_FORCE, err, sizeof err), 0);
    snprintf(f, sizeof f, "%s/" OUTDIR_MARKER, d);
    ck_assert_int_eq(symlink("thesis.tex", f), 0); /* a link named like the marker is not one */
    ck_assert_int_eq(outdir_check(&o, d, "run", "--out", 0, err, sizeof err), -1);
    ck_assert_int_eq(unlink(f), 0);
    ck_assert_int_eq(write_text_file(f, "kvscope run --out\n"), 0);
    ck_assert_int_eq(outdir_check(&o, d, "run", "--out", 0, err, sizeof err), 0);
    /* a file is never replaced by a folder; a missing parent is said up front */
    snprintf(f, sizeof f, "%s/thesis.tex", d);
    ck_assert_int_eq(outdir_check(&o, f, "run", "--out", OUTDIR_FORCE, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "is a regular file, not a folder"), "%s", err);
    ck_assert_int_eq(outdir_check(&o, at(d, sizeof d, "no/such"), "run", "--out", 0, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "does not exist"), "%s", err);
    ck_assert_int_eq(outdir_check(&o, d, "run", "--plots", OUTDIR_PARENTS, err, sizeof err), 0);
}
END_TEST

/* A commit, with one swap or with two renames: the new files and the marker, nothing
 * of the old folder, no sibling left; the marker's text is the same every time, then
 * the list of the entries the run wrote. */
static void commit_twice(unsigned flags) {
    OutDir o;
    char d[PATH_MAX + 16], f[4300], first[512];
    at(d, sizeof d, "out");
    for (int round = 0; round < 2; round++) {
        ck_assert_int_eq(outdir_check(&o, d, "budget", "--out", flags, err, sizeof err), 0);
        ck_assert_int_eq(outdir_begin(&o, err, sizeof err), 0);
        ck_assert_msg(strstr(o.tmp, "/out.tmp.") != NULL, "%s", o.tmp);
        snprintf(f, sizeof f, "%s/round%d.csv", o.tmp, round);
        ck_assert_int_eq(write_text_file(f, "a,b\n"), 0);
        ck_assert_int_eq(outdir_commit(&o, err, sizeof err), 0);
        ck_assert_int_eq(count_entries(dir), 1);  /* only out/ */
        ck_assert_int_eq(count_entries(d), 2);    /* the marker and this round's file */
        snprintf(f, sizeof f, "%s/round%d.csv", d, round);
        ck_assert(exists(f));
        snprintf(f, sizeof f, "%s/" OUTDIR_MARKER, d);
        char *m = read_file(f, NULL);
        ck_assert_ptr_nonnull(m);
        ck_assert_msg(strncmp(m, "kvscope budget --out\n", 21) == 0 && !strstr(m, dir), "%s", m);
        /* then the list of what the run wrote: this round's file alone */
        char *list = strstr(m, "\nwritten:\n"), want[64];
        ck_assert_ptr_nonnull(list);
        snprintf(want, sizeof want, "\nwritten:\nround%d.csv\t", round);
        ck_assert_msg(strncmp(list, want, strlen(want)) == 0 && !strchr(list + strlen(want), '/') &&
                      strchr(list + strlen(want), '\n') == list + strlen(list) - 1, "%s", list);
        *list = '\0';
        if (round == 0) snprintf(first, sizeof first, "%s", m);
        else ck_assert_str_eq(m, first);
        free(m);
    }
}

START_TEST(test_commit_exchange) { commit_twice(0); }
END_TEST

START_TEST(test_commit_two_renames) { commit_twice(OUTDIR_NO_EXCHANGE); }
END_TEST

START_TEST(test_abort_and_symlink) {
    OutDir o;
    char real[PATH_MAX + 16], link[PATH_MAX + 16], f[PATH_MAX + 64];
    at(real, sizeof real, "real");
    at(link, sizeof link, "link");
    ck_assert_int_eq(mkdir(real, 0755), 0);
    ck_assert_int_eq(symlink("real", link), 0);
    ck_assert_int_eq(outdir_check(&o, link, "run", "--out", 0, err, sizeof err), 0);
    ck_assert_int_eq(outdir_begin(&o, err, sizeof err), 0);
    ck_assert_msg(strncmp(o.tmp, real, strlen(real)) == 0, "temporary folder beside the link's target: %s", o.tmp);
    ck_assert_int_eq(outdir_commit(&o, err, sizeof err), 0);
    struct stat st;
    ck_assert_int_eq(lstat(link, &st), 0);
    ck_assert(S_ISLNK(st.st_mode)); /* the link stays, its folder was replaced */
    snprintf(f, sizeof f, "%s/" OUTDIR_MARKER, real);
    ck_assert(exists(f));
    /* an abort leaves the folder as it was and nothing beside it */
    ck_assert_int_eq(outdir_check(&o, link, "run", "--out", 0, err, sizeof err), 0);
    ck_assert_int_eq(outdir_begin(&o, err, sizeof err), 0);
    outdir_abort(&o);
    ck_assert(exists(f));
    ck_assert_int_eq(count_entries(dir), 2);
    /* a message about the temporary folder names the folder as the user did */
    ck_assert_int_eq(outdir_begin(&o, err, sizeof err), 0);
    char msg[8400], shown[8400];
    snprintf(msg, sizeof msg, "%s/heatmaps/a.png: No space left on device", o.tmp);
    outdir_shown(&o, msg, shown, sizeof shown);
    snprintf(msg, sizeof msg, "%s/heatmaps/a.png: No space left on device", link);
    ck_assert_str_eq(shown, msg);
    outdir_abort(&o);
    ck_assert_int_eq(unlink(link), 0);
    ck_assert_int_eq(symlink("nowhere", link), 0);
    ck_assert_int_eq(outdir_check(&o, link, "run", "--out", OUTDIR_FORCE, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "symlink to nothing"), "%s", err);
}
END_TEST

/* ---- what killed runs left ---------------------------------------------------- */

/* A folder name with files in it, and the marker when marked. */
static void make_folder(const char *name, int marked) {
    char d[PATH_MAX + 64], f[PATH_MAX + 128];
    at(d, sizeof d, name);
    ck_assert_int_eq(mkdir(d, 0755), 0);
    snprintf(f, sizeof f, "%s/attention.csv", d);
    ck_assert_int_eq(write_text_file(f, "x\n"), 0);
    if (marked) {
        snprintf(f, sizeof f, "%s/" OUTDIR_MARKER, d);
        ck_assert_int_eq(write_text_file(f, "kvscope run --out\n"), 0);
    }
}

START_TEST(test_stale_siblings) {
    char name[5][128], p[PATH_MAX + 200];
    long dead = dead_pid(), alive = (long)getppid();
    snprintf(name[0], sizeof name[0], "out.tmp.%ld.abcdef", dead);     /* killed run: removed */
    snprintf(name[1], sizeof name[1], "out.old.%ld.ghijkl", dead);     /* killed commit: removed */
    snprintf(name[2], sizeof name[2], "out.tmp.%ld.mnopqr", alive);    /* a run going on: kept */
    snprintf(name[3], sizeof name[3], "out.tmp.%ld.stuvwx", dead);     /* no marker: not ours, kept */
    snprintf(name[4], sizeof name[4], "out.tmp.%ld.yz0123", dead);     /* empty: a kill after mkdtemp */
    make_folder("out", 1);
    make_folder(name[0], 1);
    make_folder(name[1], 1);
    make_folder(name[2], 1);
    make_folder(name[3], 0);
    ck_assert_int_eq(mkdir(at(p, sizeof p, name[4]), 0755), 0);
    OutDir o;
    ck_assert_int_eq(outdir_check(&o, at(p, sizeof p, "out"), "run", "--out", 0, err, sizeof err), 0);
    ck_assert_int_eq(outdir_begin(&o, err, sizeof err), 0);
    ck_assert(!exists(at(p, sizeof p, name[0])));
    ck_assert(!exists(at(p, sizeof p, name[1])));
    ck_assert(exists(at(p, sizeof p, name[2])));
    ck_assert(exists(at(p, sizeof p, name[3])));
    ck_assert(!exists(at(p, sizeof p, name[4])));
    outdir_abort(&o);
    /* out itself missing (a kill between the two renames): the .old one comes back */
    remove_tree(at(p, sizeof p, "out"));
    snprintf(name[1], sizeof name[1], "out.old.%ld.klmnop", dead);
    make_folder(name[1], 1);
    ck_assert_int_eq(outdir_check(&o, at(p, sizeof p, "out"), "run", "--out", 0, err, sizeof err), 0);
    ck_assert_int_eq(outdir_begin(&o, err, sizeof err), 0);
    outdir_abort(&o);
    ck_assert(exists(at(p, sizeof p, "out/attention.csv")));
    ck_assert(!exists(at(p, sizeof p, name[1])));
}
END_TEST

/* ---- signals -------------------------------------------------------------------- */

/* In a child: begin an output folder and a file, then send itself sig (held back
 * for a moment when hold is set). The temporary paths are written to dir/paths. */
static void child_signalled(int sig, int hold) {
    char d[PATH_MAX + 16], f[PATH_MAX + 16], p[PATH_MAX + 16];
    OutDir o;
    OutFile of;
    /* as after exec: default dispositions (the test runner has its own handlers) */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    at(d, sizeof d, "out");
    at(f, sizeof f, "v.csv");
    if (outdir_check(&o, d, "run", "--out", 0, err, sizeof err) || outdir_begin(&o, err, sizeof err) ||
        outfile_check(&of, f, "--csv", "step\n", 0, err, sizeof err))
        _exit(3);
    FILE *fp = outfile_begin(&of, err, sizeof err);
    char inner[4300];
    snprintf(inner, sizeof inner, "%s/heatmaps", o.tmp);
    if (!fp || mkdir(inner, 0755) != 0) _exit(4);
    FILE *list = fopen(at(p, sizeof p, "paths"), "w");
    if (!list) _exit(5);
    fprintf(list, "%s\n%s\n", o.tmp, of.file.tmp);
    fclose(list);
    if (hold) cleanup_hold();
    raise(sig);
    if (hold) {
        write_text_file(at(p, sizeof p, "held"), "the signal waited\n");
        cleanup_release();
    }
    _exit(6); /* not reached: the signal ends the process */
}

static void signal_case(int sig, int hold) {
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) child_signalled(sig, hold);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == sig, "status %d", st);
    char p[PATH_MAX + 16];
    char *paths = read_file(at(p, sizeof p, "paths"), NULL);
    ck_assert_ptr_nonnull(paths);
    free(paths);
    ck_assert_int_eq(count_entries(dir), (hold ? 2 : 1)); /* paths (and held): no temporary left */
}

START_TEST(test_signal_cleanup) {
    signal_case(SIGTERM, 0);
    remove(at(err, sizeof err, "paths"));
    signal_case(SIGINT, 1);
    ck_assert(exists(at(err, sizeof err, "held")));
}
END_TEST

/* A command that catches SIGINT for a while (train) installs the cleanup first: a folder
 * begun while its own handler ran is still removed by a SIGINT after it restored the
 * handlers (without cleanup_install the cleanup would find SIGINT taken and skip it). */
static void on_flag(int sig) { (void)sig; }

START_TEST(test_cleanup_install) {
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char d[PATH_MAX + 16];
        OutDir o;
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        cleanup_install();
        struct sigaction sa, old;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_flag;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGINT, &sa, &old) != 0) _exit(3);
        if (outdir_check(&o, at(d, sizeof d, "out"), "train", "--out", 0, err, sizeof err) ||
            outdir_begin(&o, err, sizeof err))
            _exit(4);
        sigaction(SIGINT, &old, NULL);
        raise(SIGINT);
        _exit(5); /* not reached */
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT, "status %d", st);
    ck_assert_int_eq(count_entries(dir), 0); /* the temporary folder removed */
}
END_TEST

/* ---- one output file ------------------------------------------------------------- */

START_TEST(test_outfile) {
    OutFile f;
    char p[PATH_MAX + 16];
    at(p, sizeof p, "v.csv");
    ck_assert_int_eq(write_text_file(p, "my notes\n"), 0);
    ck_assert_int_eq(outfile_check(&f, p, "--csv", "step,x\n", 0, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "--csv is a file kvscope did not write") && strstr(err, "\"step,x\""), "%s", err);
    ck_assert_int_eq(outfile_check(&f, p, "--csv", "step,x\n", OUTDIR_FORCE, err, sizeof err), 0);
    FILE *fp = outfile_begin(&f, err, sizeof err);
    ck_assert_ptr_nonnull(fp);
    fputs("step,x\n0,1\n", fp);
    ck_assert_int_eq(outfile_commit(&f, fp, err, sizeof err), 0);
    char *t = read_file(p, NULL);
    ck_assert_str_eq(t, "step,x\n0,1\n");
    free(t);
    ck_assert_int_eq(count_entries(dir), 1);
    /* now kvscope's: replaced without --force; an abort leaves it */
    ck_assert_int_eq(outfile_check(&f, p, "--csv", "step,x\n", 0, err, sizeof err), 0);
    ck_assert_ptr_nonnull(fp = outfile_begin(&f, err, sizeof err));
    outfile_abort(&f, fp);
    ck_assert_int_eq(count_entries(dir), 1);
    ck_assert_int_eq(outfile_check(&f, dir, "--csv", "step,x\n", OUTDIR_FORCE, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "is a directory"), "%s", err);
    ck_assert_int_eq(outfile_check(&f, "/dev/null", "--csv", "step,x\n", OUTDIR_FORCE, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "is a character device"), "%s", err);
}
END_TEST

/* ---- input files ------------------------------------------------------------------ */

START_TEST(test_infile_not_regular) {
    char p[PATH_MAX + 16], *buf;
    size_t len;
    at(p, sizeof p, "fifo");
    ck_assert_int_eq(mkfifo(p, 0644), 0);
    /* open(2) of a FIFO without a writer would wait forever; the test's timeout catches it */
    ck_assert_int_eq(infile_read(p, 100, &buf, &len, err, sizeof err), INFILE_BAD);
    ck_assert_msg(strstr(err, "fifo: is a FIFO, not a regular file"), "%s", err);
    ck_assert_int_eq(infile_read("/dev/zero", 100, &buf, &len, err, sizeof err), INFILE_BAD);
    ck_assert_msg(strstr(err, "/dev/zero: is a character device"), "%s", err);
    ck_assert_int_eq(infile_read(dir, 100, &buf, &len, err, sizeof err), INFILE_BAD);
    ck_assert_msg(strstr(err, "is a directory"), "%s", err);
    ck_assert_int_eq(infile_read(at(p, sizeof p, "none"), 100, &buf, &len, err, sizeof err), INFILE_BAD);
    ck_assert_msg(strstr(err, "none: cannot open: No such file"), "%s", err);
}
END_TEST

START_TEST(test_infile_limit) {
    char p[PATH_MAX + 16], *buf;
    size_t len;
    at(p, sizeof p, "f");
    char text[5000];
    memset(text, 'a', sizeof text - 1);
    text[sizeof text - 1] = '\0';
    ck_assert_int_eq(write_text_file(p, text), 0);
    ck_assert_int_eq(infile_read(p, 4999, &buf, &len, err, sizeof err), 0);
    ck_assert_uint_eq(len, 4999);
    ck_assert_str_eq(buf, text);
    free(buf);
    ck_assert_int_eq(infile_read(p, 4998, &buf, &len, err, sizeof err), INFILE_BAD);
    ck_assert_msg(strstr(err, "larger than the limit of 4998 bytes"), "%s", err);
    /* a file that claims 0 bytes but has more (/proc) is read to its end, within the limit */
    ck_assert_int_eq(infile_read("/proc/self/status", 1 << 20, &buf, &len, err, sizeof err), 0);
    ck_assert_msg(len > 0 && strstr(buf, "Name:"), "%zu bytes", len);
    free(buf);
    ck_assert_int_eq(infile_read("/proc/self/status", 16, &buf, &len, err, sizeof err), INFILE_BAD);
    ck_assert_msg(strstr(err, "larger than the limit of 16 bytes"), "%s", err);
}
END_TEST

/* ---- the files of a folder, one file at a time ------------------------------------ */

START_TEST(test_outdir_fopen) {
    char d[PATH_MAX], p[sizeof ((OutDir *)0)->tmp + 16];
    OutDir o;
    ck_assert_int_eq(outdir_check(&o, at(d, sizeof d, "out"), "run", "--out", 0, err, sizeof err), 0);
    ck_assert_int_eq(outdir_begin(&o, err, sizeof err), 0);
    FILE *f = outdir_fopen(&o, "a.csv", err, sizeof err);
    ck_assert_ptr_nonnull(f);
    fputs("x\n", f);
    ck_assert_int_eq(file_close(f), 0);
    snprintf(p, sizeof p, "%s/a.csv", o.tmp);
    ck_assert(exists(p)); /* in the temporary folder until the commit */
    /* a name that cannot be opened: the message names the file and the folder as the
     * user spelled it, never the temporary one */
    ck_assert_ptr_null(outdir_fopen(&o, "no/such/sub.csv", err, sizeof err));
    ck_assert_msg(strstr(err, "--out: cannot write no/such/sub.csv (") && strstr(err, d) &&
                      !strstr(err, ".tmp."), "%s", err);
    ck_assert_int_eq(outdir_commit(&o, err, sizeof err), 0);
    snprintf(p, sizeof p, "%s/a.csv", d);
    char *t = read_file(p, NULL);
    ck_assert_str_eq(t, "x\n");
    free(t);
}
END_TEST

/* The atomic writer: the target changes only at the commit, and any failure leaves it
 * as it was, with nothing beside it. */
START_TEST(test_atomic_file) {
    char p[PATH_MAX];
    at(p, sizeof p, "f.txt");
    ck_assert_int_eq(write_text_file(p, "old\n"), 0);
    AtomicFile af;
    FILE *f = atomic_open(&af, p, 0);
    ck_assert_ptr_nonnull(f);
    fputs("new\n", f);
    ck_assert_int_eq(count_entries(dir), 2); /* the old file and the temporary one */
    char *t = read_file(p, NULL);
    ck_assert_str_eq(t, "old\n");
    free(t);
    ck_assert_int_eq(atomic_commit(&af, f), 0);
    t = read_file(p, NULL);
    ck_assert_str_eq(t, "new\n");
    free(t);
    ck_assert_int_eq(count_entries(dir), 1);
    struct stat st;
    mode_t mask = umask(022);
    umask(mask);
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0666 & ~mask); /* as fopen would make it */
    /* abort: the old file stays, the temporary one goes */
    f = atomic_open(&af, p, 0);
    ck_assert_ptr_nonnull(f);
    fputs("lost\n", f);
    atomic_abort(&af, f);
    atomic_abort(&af, NULL); /* twice is fine */
    t = read_file(p, NULL);
    ck_assert_str_eq(t, "new\n");
    free(t);
    ck_assert_int_eq(count_entries(dir), 1);
    /* a folder that is not there */
    char q[PATH_MAX + 16];
    snprintf(q, sizeof q, "%s/none/f.txt", dir);
    errno = 0;
    ck_assert_ptr_null(atomic_open(&af, q, 0));
    ck_assert_int_eq(errno, ENOENT);
    /* listed for the signal cleanup while it is open; a full list is an error */
    f = atomic_open(&af, p, 1);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_ge(af.slot, 0);
    atomic_abort(&af, f);
    ck_assert_int_eq(af.slot, -1);
    int slots[CLEANUP_SLOTS], n = 0;
    while (n < CLEANUP_SLOTS && (slots[n] = cleanup_add("/nonexistent/kvscope-test")) >= 0) n++;
    errno = 0;
    ck_assert_ptr_null(atomic_open(&af, p, 1));
    ck_assert_int_eq(errno, EMFILE);
    while (n > 0) cleanup_drop(slots[--n]);
    ck_assert_int_eq(count_entries(dir), 1);
    /* a write that fails at the close (a full device) is reported, nothing renamed */
    f = atomic_open(&af, p, 0);
    ck_assert_ptr_nonnull(f);
    FILE *full = fopen("/dev/full", "w");
    if (!full) {
        atomic_abort(&af, f);
        TEST_SKIPPED("no /dev/full here: the failed-write case");
        return;
    }
    char tmp[sizeof af.tmp];
    memcpy(tmp, af.tmp, sizeof tmp);
    fclose(f); /* write into /dev/full through the same AtomicFile instead */
    fputs("x", full);
    errno = 0;
    ck_assert_int_eq(atomic_commit(&af, full), -1);
    ck_assert_int_eq(errno, ENOSPC);
    ck_assert(!exists(tmp)); /* removed */
    t = read_file(p, NULL);
    ck_assert_str_eq(t, "new\n");
    free(t);
}
END_TEST

/* ---- one rule for output files, and inputs -------------------------------------- */

/* OUTFILE_OURS_ONLY: only a non-empty file starting with the header, named directly,
 * with or without --force; outfile_remove removes only such a file; path_same and
 * path_inside see a hard link and another spelling as the input. */
START_TEST(test_outfile_ours_only) {
    char p[PATH_MAX], q[PATH_MAX], ln[PATH_MAX], sub[PATH_MAX], deep[PATH_MAX + 16];
    OutFile f;
    const unsigned flags[] = {OUTFILE_OURS_ONLY, OUTFILE_OURS_ONLY | OUTDIR_FORCE};
    ck_assert_int_eq(write_text_file(at(p, sizeof p, "notes.txt"), "precious\n"), 0);
    ck_assert_int_eq(write_text_file(at(q, sizeof q, "empty"), ""), 0);
    ck_assert_int_eq(symlink(p, at(ln, sizeof ln, "link")), 0);
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(outfile_check(&f, p, "--checkpoint", "KVSCKPT", flags[k], err, sizeof err), -1);
        ck_assert_msg(strstr(err, "--checkpoint is a file kvscope did not write") && strstr(err, p), "%s", err);
        ck_assert_int_eq(outfile_check(&f, q, "--checkpoint", "KVSCKPT", flags[k], err, sizeof err), -1);
        ck_assert_int_eq(outfile_check(&f, ln, "--checkpoint", "KVSCKPT", flags[k], err, sizeof err), -1);
        ck_assert_msg(strstr(err, "symlink"), "%s", err);
    }
    ck_assert_int_eq(outfile_check(&f, p, "--html", "KVSCKPT", OUTDIR_FORCE, err, sizeof err), 0);
    ck_assert_int_eq(outfile_remove(&f), -1); /* not a checkpoint: stays */
    char *t = read_file(p, NULL);
    ck_assert_str_eq(t, "precious\n");
    free(t);
    ck_assert_int_eq(write_text_file(p, "KVSCKPT\x02rest"), 0);
    ck_assert_int_eq(outfile_check(&f, p, "--checkpoint", "KVSCKPT", OUTFILE_OURS_ONLY, err, sizeof err), 0);
    FILE *fp = outfile_begin(&f, err, sizeof err);
    ck_assert_ptr_nonnull(fp);
    fputs("KVSCKPT\x02new", fp);
    ck_assert_int_eq(outfile_commit(&f, fp, err, sizeof err), 0);
    t = read_file(p, NULL);
    ck_assert_str_eq(t, "KVSCKPT\x02new");
    free(t);
    ck_assert_int_eq(outfile_remove(&f), 0);
    ck_assert_int_eq(access(p, F_OK), -1);
    /* inputs: a hard link, another spelling, a file inside a folder */
    ck_assert_int_eq(write_text_file(p, "input"), 0);
    ck_assert_int_eq(link(p, at(q, sizeof q, "hard")), 0);
    ck_assert_int_eq(path_same(p, q), 1);
    ck_assert_int_eq(path_same(p, ln), 1);
    snprintf(deep, sizeof deep, "%s/./x/../notes.txt", dir);
    ck_assert_int_eq(mkdir(at(sub, sizeof sub, "x"), 0755), 0);
    ck_assert_int_eq(path_same(p, deep), 1);
    ck_assert_int_eq(path_same(p, sub), 0);
    ck_assert_int_eq(path_inside(dir, p), 1);
    ck_assert_int_eq(path_inside(sub, p), 0);
    ck_assert_int_eq(path_inside(sub, sub), 1);
}
END_TEST

/* ---- mounts, the password database's home, racing commits ------------------------- */

/* mount --bind src dst; 0, or -1 where this machine cannot (not root, no mount(8)). */
static int bind_mount(const char *src, const char *dst) {
    char cmd[3 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "mount --bind '%s' '%s' 2>/dev/null", src, dst);
    return system(cmd) == 0 ? 0 : -1;
}

static void unmount(const char *path) {
    char cmd[2 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "umount '%s'", path);
    ck_assert_int_eq(system(cmd), 0);
}

/* A removal meets a bind mount of a folder on the same file system (same st_dev): it
 * removes what is its own, fails with EXDEV, and the mounted files survive. The old
 * nftw walk went through the mount and emptied the other folder. */
START_TEST(test_remove_stays_on_mount) {
    char data[PATH_MAX], keep[PATH_MAX + 16], tree[PATH_MAX], mnt[PATH_MAX + 16], f[PATH_MAX + 16];
    at(data, sizeof data, "data");
    at(tree, sizeof tree, "tree");
    snprintf(keep, sizeof keep, "%s/keep.txt", data);
    snprintf(mnt, sizeof mnt, "%s/sub", tree);
    ck_assert_int_eq(mkdir(data, 0755) | mkdir(tree, 0755) | mkdir(mnt, 0755), 0);
    snprintf(mnt, sizeof mnt, "%s/sub/mnt", tree);
    ck_assert_int_eq(mkdir(mnt, 0755), 0);
    ck_assert_int_eq(write_text_file(keep, "precious"), 0);
    snprintf(f, sizeof f, "%s/a.csv", tree);
    ck_assert_int_eq(write_text_file(f, "x"), 0);
    if (bind_mount(data, mnt) != 0) {
        TEST_SKIPPED("cannot bind-mount a folder here (needs root and mount(8))");
        return;
    }
    char found[PATH_MAX];
    int seen = rmtree_find_mount(tree, found, sizeof found);
    errno = 0;
    int rc = remove_tree(tree), e = errno;
    int kept = exists(keep), own_gone = !exists(f), left = exists(mnt);
    unmount(mnt);
    ck_assert_msg(kept, "the removal went through the mount");
    ck_assert_int_eq(seen, 1);
    ck_assert_str_eq(found, "sub/mnt");
    ck_assert_int_eq(rc, -1);
    ck_assert_int_eq(e, EXDEV);
    ck_assert(own_gone && left);
    char *t = read_file(keep, NULL);
    ck_assert_str_eq(t, "precious");
    free(t);
    ck_assert_int_eq(remove_tree(tree), 0); /* unmounted: now it all goes */
}
END_TEST

/* An output folder that holds a mount point, or is one, is refused by the check (even
 * with --force), naming it; a stale sibling holding one is left whole. */
START_TEST(test_mounts_refused) {
    OutDir o;
    char data[PATH_MAX], out[PATH_MAX], mnt[PATH_MAX + 16], m[PATH_MAX + 128], keep[PATH_MAX + 16];
    at(data, sizeof data, "data");
    at(out, sizeof out, "o");
    snprintf(mnt, sizeof mnt, "%s/mnt", out);
    snprintf(keep, sizeof keep, "%s/keep.txt", data);
    ck_assert_int_eq(mkdir(data, 0755) | mkdir(out, 0755) | mkdir(mnt, 0755), 0);
    snprintf(m, sizeof m, "%s/" OUTDIR_MARKER, out);
    ck_assert_int_eq(write_text_file(m, "kvscope run --out\n") | write_text_file(keep, "mine"), 0);
    if (bind_mount(data, mnt) != 0) {
        TEST_SKIPPED("cannot bind-mount a folder here (needs root and mount(8))");
        return;
    }
    int r0 = outdir_check(&o, out, "run", "--out", 0, err, sizeof err);
    char e0[sizeof err];
    memcpy(e0, err, sizeof err);
    int r1 = outdir_check(&o, out, "run", "--out", OUTDIR_FORCE, err, sizeof err);
    unmount(mnt);
    ck_assert_int_eq(r0, -1);
    ck_assert_int_eq(r1, -1);
    ck_assert_msg(strstr(e0, "--out holds a mount point") && strstr(e0, "/o/mnt"), "%s", e0);
    /* an empty mount point as the output folder itself */
    if (bind_mount(data, mnt) != 0) ck_abort_msg("bind mount failed the second time");
    r0 = outdir_check(&o, mnt, "run", "--out", OUTDIR_FORCE, err, sizeof err);
    unmount(mnt);
    ck_assert_int_eq(r0, -1);
    ck_assert_msg(strstr(err, "--out is a mount point") && strstr(err, mnt), "%s", err);
    /* what a killed run left, with a mount inside: not touched */
    char stale[PATH_MAX + 64], smnt[PATH_MAX + 80];
    snprintf(stale, sizeof stale, "%s/o.tmp.%ld.Ab3dE6", dir, dead_pid());
    snprintf(smnt, sizeof smnt, "%s/mnt", stale);
    ck_assert_int_eq(mkdir(stale, 0755) | mkdir(smnt, 0755), 0);
    snprintf(m, sizeof m, "%s/" OUTDIR_MARKER, stale);
    ck_assert_int_eq(write_text_file(m, "kvscope run --out\n"), 0);
    if (bind_mount(data, smnt) != 0) ck_abort_msg("bind mount failed the third time");
    int c = outdir_check(&o, out, "run", "--out", 0, err, sizeof err);
    int b = c == 0 ? outdir_begin(&o, err, sizeof err) : -1;
    if (b == 0) outdir_abort(&o);
    int kept = exists(keep), still = exists(m);
    unmount(smnt);
    ck_assert_msg(b == 0, "%s", err);
    ck_assert(kept && still);
}
END_TEST

/* $HOME unset or empty: the home folder of the password database is still refused.
 * Only outdir_check runs (it has no side effects), in a child whose environment
 * lacks HOME, so the real home folder is never at risk. */
START_TEST(test_passwd_home) {
    struct passwd *pw = getpwuid(getuid());
    struct stat st;
    if (!pw || !pw->pw_dir || stat(pw->pw_dir, &st) != 0 || strcmp(pw->pw_dir, "/") == 0) {
        TEST_SKIPPED("the running user has no home folder in the password database");
        return;
    }
    char home[PATH_MAX];
    snprintf(home, sizeof home, "%s", pw->pw_dir);
    for (int empty = 0; empty < 2; empty++) {
        pid_t p = fork();
        ck_assert_int_ge(p, 0);
        if (p == 0) {
            OutDir o;
            char e[8400];
            if (empty ? setenv("HOME", "", 1) : unsetenv("HOME")) _exit(3);
            if (chdir("/") != 0) _exit(3);
            int rc = outdir_check(&o, home, "run", "--out", OUTDIR_FORCE, e, sizeof e);
            _exit(rc == -1 && strstr(e, "--out is your home folder") ? 0 : 1);
        }
        int st2;
        ck_assert_int_eq(waitpid(p, &st2, 0), p);
        ck_assert_msg(WIFEXITED(st2) && WEXITSTATUS(st2) == 0, "%s HOME: %s not refused",
                      empty ? "empty" : "unset", home);
    }
}
END_TEST

/* Spin until the next whole 2 ms of the monotonic clock (the same instant in every
 * process), at least 1 ms from now: two processes that both spin start together. */
static void spin_to_tick(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    const long long tick = 2000000, now = (long long)t.tv_sec * 1000000000 + t.tv_nsec;
    const long long go = (now + 1000000 + tick - 1) / tick * tick;
    do clock_gettime(CLOCK_MONOTONIC, &t);
    while ((long long)t.tv_sec * 1000000000 + t.tv_nsec < go);
}

/* Two processes commit the same new folder at the same moment (a pipe each way lines
 * them up, then both spin to the same clock tick), 100 times: both succeed every time,
 * and each folder is one writer's whole output with nothing beside it. Before, the
 * second rename could meet the first's folder and fail ("Directory not empty"). */
START_TEST(test_commit_race) {
    enum { ROUNDS = 100 };
    int ab[2], ba[2];
    ck_assert_int_eq(pipe(ab) | pipe(ba), 0);
    fflush(NULL);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    const int me = child == 0 ? 1 : 0, rd = me ? ab[0] : ba[0], wr = me ? ba[1] : ab[1];
    int failed = 0;
    for (int i = 0; i < ROUNDS; i++) {
        OutDir o;
        char name[PATH_MAX], e[8400], c = 0;
        snprintf(name, sizeof name, "%s/r%d", dir, i);
        if (outdir_check(&o, name, "run", "--out", 0, e, sizeof e) || outdir_begin(&o, e, sizeof e)) {
            failed++;
            continue;
        }
        FILE *f1 = outdir_fopen(&o, "one", e, sizeof e), *f2 = outdir_fopen(&o, "two", e, sizeof e);
        if (f1) fprintf(f1, "%d", me);
        if (f2) fprintf(f2, "%d", me);
        int bad = file_close(f1) | file_close(f2) | !f1 | !f2;
        if (write(wr, "x", 1) != 1 || read(rd, &c, 1) != 1) bad = 1; /* both ready */
        spin_to_tick();
        if (bad || outdir_commit(&o, e, sizeof e) != 0) failed++;
    }
    if (child == 0) _exit(failed > 255 ? 255 : failed);
    int st;
    ck_assert_int_eq(waitpid(child, &st, 0), child);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child failed %d commits", WEXITSTATUS(st));
    ck_assert_int_eq(failed, 0);
    ck_assert_int_eq(count_entries(dir), ROUNDS);
    for (int i = 0; i < ROUNDS; i++) {
        char p1[PATH_MAX], p2[PATH_MAX], name[32];
        snprintf(name, sizeof name, "r%d/one", i);
        char *a = read_file(at(p1, sizeof p1, name), NULL);
        snprintf(name, sizeof name, "r%d/two", i);
        char *b = read_file(at(p2, sizeof p2, name), NULL);
        snprintf(name, sizeof name, "r%d", i);
        ck_assert_msg(a && b && strcmp(a, b) == 0, "r%d mixes two runs", i);
        ck_assert_int_eq(count_entries(at(p1, sizeof p1, name)), 3);
        free(a);
        free(b);
    }
}
END_TEST

/* SIGTERM while the temporary folder holds a bind mount (made during the run): the
 * handler's removal does not enter it, so the mounted folder keeps its files (the
 * handler used to empty it). */
START_TEST(test_signal_stays_on_mount) {
    char data[PATH_MAX], keep[PATH_MAX + 16], cmd[PATH_MAX + 128];
    at(data, sizeof data, "data");
    snprintf(keep, sizeof keep, "%s/keep.txt", data);
    ck_assert_int_eq(mkdir(data, 0755), 0);
    ck_assert_int_eq(write_text_file(keep, "precious"), 0);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char d[PATH_MAX + 16], mnt[4300];
        OutDir o;
        signal(SIGTERM, SIG_DFL);
        if (outdir_check(&o, at(d, sizeof d, "out"), "run", "--out", 0, err, sizeof err) ||
            outdir_begin(&o, err, sizeof err))
            _exit(4);
        snprintf(mnt, sizeof mnt, "%s/mnt", o.tmp);
        if (mkdir(mnt, 0755) != 0 || bind_mount(data, mnt) != 0) {
            outdir_abort(&o);
            _exit(7);
        }
        raise(SIGTERM);
        _exit(5); /* not reached */
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 7) {
        TEST_SKIPPED("cannot bind-mount a folder here (needs root and mount(8))");
        return;
    }
    int kept = exists(keep);
    snprintf(cmd, sizeof cmd, "awk '{print $2}' /proc/mounts | grep '^%s/out' | xargs -r -n1 umount -l",
             dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status %d", st);
    ck_assert_msg(kept, "the signal handler emptied the mounted folder");
}
END_TEST

/* What an existing folder is (outfolder.h): the marker's command, a model, the list of
 * what a run wrote and the user's entries beside it, a folder that is not the user's. */
START_TEST(test_outfolder) {
    char d[PATH_MAX + 16], f[PATH_MAX + 64], cmd[32], opt[32];
    at(d, sizeof d, "w");
    ck_assert_int_eq(mkdir(d, 0755), 0);
    ck_assert_int_eq(outfolder_marker(d, cmd, sizeof cmd, opt, sizeof opt), 0);
    snprintf(f, sizeof f, "%s/" OUTDIR_MARKER, d);
    ck_assert_int_eq(write_text_file(f, "not kvscope\n"), 0);
    ck_assert_int_eq(outfolder_marker(d, cmd, sizeof cmd, opt, sizeof opt), 0);
    ck_assert_int_eq(write_text_file(f, "kvscope heads --plots\n\ntext\n"), 0);
    ck_assert_int_eq(outfolder_marker(d, cmd, sizeof cmd, opt, sizeof opt), 1);
    ck_assert_str_eq(cmd, "heads");
    ck_assert_str_eq(opt, "--plots");
    /* the list: every entry, folders as "sub/", sorted; then the user's beside it */
    snprintf(f, sizeof f, "%s/b.csv", d);
    ck_assert_int_eq(write_text_file(f, "x"), 0);
    snprintf(f, sizeof f, "%s/sub", d);
    ck_assert_int_eq(mkdir(f, 0755), 0);
    snprintf(f, sizeof f, "%s/sub/a.png", d);
    ck_assert_int_eq(write_text_file(f, "x"), 0);
    snprintf(f, sizeof f, "%s/sub/timing.csv", d); /* measured: named without a stamp */
    ck_assert_int_eq(write_text_file(f, "0.123"), 0);
    OutNames u;
    ck_assert_int_eq(outfolder_user_files(d, &u), 0);
    ck_assert_int_eq(u.n, 0); /* no list: an earlier kvscope's folder is all kvscope's */
    outfolder_names_free(&u);
    ck_assert_int_eq(outfolder_note_written(d), 0);
    snprintf(f, sizeof f, "%s/" OUTDIR_MARKER, d);
    char *m = read_file(f, NULL);
    /* each file with its size and FNV-1a 64 of its bytes ("x": computed here by hand) */
    unsigned long long hx = (1469598103934665603ull ^ 'x') * 1099511628211ull;
    char want[160];
    snprintf(want, sizeof want, "\nwritten:\nb.csv\t1 %016llx\nsub/\nsub/a.png\t1 %016llx\nsub/timing.csv\n",
             hx, hx);
    ck_assert_msg(m && strstr(m, want), "%s", m);
    free(m);
    const char *mine[] = {"NOTES.md", "sub/mine.txt", "zz"};
    for (int i = 0; i < 3; i++) {
        snprintf(f, sizeof f, "%s/%s", d, mine[i]);
        ck_assert_int_eq(i == 2 ? mkdir(f, 0755) : write_text_file(f, "mine"), 0);
    }
    snprintf(f, sizeof f, "%s/zz/deep.txt", d);
    ck_assert_int_eq(write_text_file(f, "mine"), 0);
    ck_assert_int_eq(outfolder_user_files(d, &u), 0);
    ck_assert_int_eq(u.n, 3); /* zz/ whole, not zz/deep.txt */
    for (int i = 0; i < 3; i++) ck_assert_str_eq(u.v[i], mine[i]);
    outfolder_names_free(&u);
    /* a listed file the user rewrote (same size, other bytes) and a folder where the run
     * wrote a file are the user's; the file as written is not */
    snprintf(f, sizeof f, "%s/b.csv", d);
    ck_assert_int_eq(write_text_file(f, "y"), 0);
    snprintf(f, sizeof f, "%s/sub/a.png", d);
    ck_assert_int_eq(unlink(f), 0);
    ck_assert_int_eq(mkdir(f, 0755), 0);
    ck_assert_int_eq(outfolder_user_files(d, &u), 0);
    const char *now[] = {"NOTES.md", "b.csv", "sub/a.png", "sub/mine.txt", "zz"};
    ck_assert_int_eq(u.n, 5);
    for (int i = 0; i < 5; i++) ck_assert_str_eq(u.v[i], now[i]);
    outfolder_names_free(&u);
    snprintf(f, sizeof f, "%s/b.csv", d);
    ck_assert_int_eq(write_text_file(f, "x"), 0); /* the bytes the run wrote: kvscope's again */
    ck_assert_int_eq(outfolder_user_files(d, &u), 0);
    ck_assert_int_eq(u.n, 4);
    ck_assert_str_eq(u.v[1], "sub/a.png");
    outfolder_names_free(&u);
    snprintf(f, sizeof f, "%s/sub/a.png", d);
    ck_assert_int_eq(rmdir(f), 0);
    /* a model: config.json and weights */
    ck_assert_int_eq(outfolder_is_model(d), 0);
    snprintf(f, sizeof f, "%s/config.json", d);
    ck_assert_int_eq(write_text_file(f, "{}"), 0);
    ck_assert_int_eq(outfolder_is_model(d), 0);
    snprintf(f, sizeof f, "%s/pytorch_model.bin", d);
    ck_assert_int_eq(write_text_file(f, "w"), 0);
    ck_assert_int_eq(outfolder_is_model(d), 1);
    /* the user's: under /tmp (this folder); a system folder is not */
    ck_assert_ptr_null(outfolder_not_users(d));
    ck_assert_ptr_nonnull(outfolder_not_users("/usr/share"));
    ck_assert_ptr_nonnull(outfolder_not_users("/etc"));
}
END_TEST

Suite *make_outdir_suite(void) {
    Suite *s = suite_create("outdir");
    TCase *t = tcase_create("outdir");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, test_outfile_ours_only);
    tcase_add_test(t, test_path_resolve);
    tcase_add_test(t, test_forbidden_folders);
    tcase_add_test(t, test_overlap_and_holds);
    tcase_add_test(t, test_marker_rules);
    tcase_add_test(t, test_outfolder);
    tcase_add_test(t, test_commit_exchange);
    tcase_add_test(t, test_commit_two_renames);
    tcase_add_test(t, test_abort_and_symlink);
    tcase_add_test(t, test_stale_siblings);
    tcase_add_test(t, test_signal_cleanup);
    tcase_add_test(t, test_cleanup_install);
    tcase_add_test(t, test_outfile);
    tcase_add_test(t, test_outdir_fopen);
    tcase_add_test(t, test_atomic_file);
    tcase_add_test(t, test_infile_not_regular);
    tcase_add_test(t, test_infile_limit);
    tcase_add_test(t, test_remove_stays_on_mount);
    tcase_add_test(t, test_mounts_refused);
    tcase_add_test(t, test_passwd_home);
    tcase_add_test(t, test_commit_race);
    tcase_add_test(t, test_signal_stays_on_mount);
    tcase_set_timeout(t, 30); /* the race's 100 rounds take seconds under SAN=1 */
    suite_add_tcase(s, t);
    return s;
}
