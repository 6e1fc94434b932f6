/* check_cli.c — bin/kvscope as a user meets it: bad input, determinism, output. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model.h"
#include "outdir.h"
#include "testutil.h"

/* Each bad input: exit 2, one "kvscope: ..." line, and --out left as it was. */
static const char *const bad[][12] = {
    {"run", "--bogus", NULL},
    {"run", "--steps", "abc", NULL},
    {"run", "--steps", "-1", NULL},
    {"run", "--heads", "0", NULL},
    {"run", "--dim", "100", "--heads", "12", NULL},
    {"run", "--prompt", "", NULL},
    {"run", "--prompt", "a long prompt", "--ctx", "4", NULL},
    {"run", "--prompt", "abc", "--ctx", "8", "--steps", "6", NULL},
    {"run", "--prompt-ids", "1,2,300", NULL},
    {"run", "--prompt-ids", "1,,2", NULL},
    {"run", "--seed", "x1", NULL},
    {"run", "--layers-shown", "5", NULL},
    {"run", "--steps", NULL},
    {"run", "--kernels", "sse", NULL},
    {"verify", "--vocab", "0", NULL},
    {"heads", "--ablate", "9.4", NULL},
    {"heads", "--ablate", "0.x", NULL},
    {"run", "--fig-heads", "1.4", NULL},
    {"nosuchcommand", NULL},
};

START_TEST(test_bad_input) {
    char dir[64], out[128], marker[160], errf[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/out", dir);
    ck_assert_int_eq(mkdir(out, 0755), 0);
    snprintf(marker, sizeof marker, "%s/keep.txt", out);
    FILE *f = fopen(marker, "w");
    ck_assert_ptr_nonnull(f);
    fputs("before", f);
    fclose(f);
    /* a folder kvscope wrote: the check of --out passes, so the bad value is what fails */
    snprintf(marker, sizeof marker, "%s/" OUTDIR_MARKER, out);
    ck_assert_int_eq(write_text_file(marker, "kvscope run --out\n"), 0);
    snprintf(marker, sizeof marker, "%s/keep.txt", out);
    snprintf(errf, sizeof errf, "%s/err.txt", dir);

    /* the command, then --out, then the bad options: a trailing "--steps" stays valueless */
    const char *args[16];
    int n = 0;
    args[n++] = bad[_i][0];
    args[n++] = "--out";
    args[n++] = out;
    for (int k = 1; bad[_i][k]; k++) args[n++] = bad[_i][k];
    args[n] = NULL;
    ck_assert_int_eq(run_kvscope(args, NULL, errf), 2);
    char *err = read_file(errf, NULL);
    ck_assert_ptr_nonnull(err);
    ck_assert_msg(strncmp(err, "kvscope: ", 9) == 0, "stderr: %s", err);
    ck_assert_msg(strchr(err, '\n') == err + strlen(err) - 1, "not one line: %s", err);
    free(err);
    ck_assert_int_eq(count_entries(out), 2); /* keep.txt and the marker */
    ck_assert_int_eq(count_entries(dir), 2); /* out/ and err.txt: no temporary folder */
    char *keep = read_file(marker, NULL);
    ck_assert_str_eq(keep, "before");
    free(keep);
    remove_tree(dir);
}
END_TEST

START_TEST(test_bad_out) {
    char dir[64], file[128], errf[128], path[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(file, sizeof file, "%s/afile", dir);
    snprintf(errf, sizeof errf, "%s/err", dir);
    FILE *f = fopen(file, "w");
    fputs("x", f);
    fclose(f);
    const char *a1[] = {"run", "--quiet", "--out", file, NULL};
    ck_assert_int_eq(run_kvscope(a1, NULL, errf), 2); /* not a directory */
    snprintf(path, sizeof path, "%s/no/such/parent", dir);
    const char *a2[] = {"run", "--quiet", "--out", path, NULL};
    ck_assert_int_eq(run_kvscope(a2, NULL, errf), 2);
    const char *a3[] = {"run", "--quiet", "--out", "/proc/kvscope-test", NULL};
    ck_assert_int_eq(run_kvscope(a3, NULL, errf), 2); /* unwritable, even as root */
    ck_assert_int_eq(count_entries(dir), 2);
    remove_tree(dir);
}
END_TEST

static const char *const csvs[] = {"shapes.csv", "attention.csv", "kv_memory.csv", "flops.csv", "tokens.csv", "logits.csv"};

START_TEST(test_deterministic) {
    char dir[64], a[128], b[128], c[128], fa[200], fb[200], fc[200];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    snprintf(c, sizeof c, "%s/c", dir);
    const char *ra[] = {"run", "--quiet", "--steps", "3", "--logits", "--out", a, NULL};
    const char *rb[] = {"run", "--quiet", "--steps", "3", "--logits", "--out", b, NULL};
    const char *rc[] = {"run", "--quiet", "--steps", "3", "--logits", "--seed", "2", "--out", c, NULL};
    ck_assert_int_eq(run_kvscope(ra, NULL, NULL), 0);
    ck_assert_int_eq(run_kvscope(rb, NULL, NULL), 0);
    ck_assert_int_eq(run_kvscope(rc, NULL, NULL), 0);
    for (size_t i = 0; i < sizeof csvs / sizeof csvs[0]; i++) {
        snprintf(fa, sizeof fa, "%s/%s", a, csvs[i]);
        snprintf(fb, sizeof fb, "%s/%s", b, csvs[i]);
        ck_assert_msg(files_equal(fa, fb), "%s differs between two runs", csvs[i]);
    }
    snprintf(fa, sizeof fa, "%s/logits.csv", a);
    snprintf(fc, sizeof fc, "%s/logits.csv", c);
    ck_assert_msg(!files_equal(fa, fc), "another seed gave the same logits");
    /* re-running into an existing folder replaces it whole */
    ck_assert_int_eq(run_kvscope(ra, NULL, NULL), 0);
    ck_assert_int_eq(count_entries(dir), 3);
    remove_tree(dir);
}
END_TEST

/* --kernels: every level this CPU has gives the default run's files byte for byte, with
 * float32 and fp16 weights, with the default recording (attention observed) and with
 * the logits alone (the fast path's fused stores); a level it lacks is refused in one
 * line naming it, exit 2. */
START_TEST(test_kernels) {
    static const char *const files[] = {"logits.csv", "attention.csv", "tokens.csv", "shapes.csv"};
    char dir[64], a[4][128], b[128], fa[200], fb[200], errf[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(b, sizeof b, "%s/b", dir);
    snprintf(errf, sizeof errf, "%s/err.txt", dir);
    /* the default runs: fp32 and fp16 weights, recorded in full or the logits alone */
    for (int v = 0; v < 4; v++) {
        const char *wt = v & 1 ? "fp16" : "fp32", *what = v & 2 ? "all" : "logits,tokens,shapes";
        snprintf(a[v], sizeof a[v], "%s/a%d", dir, v);
        const char *r[] = {"run", "--quiet", "--layers", "2", "--dim", "192", "--heads", "6",
                           "--steps", "4", "--logits", "--weights", wt, "--record", what,
                           "--out", a[v], NULL};
        ck_assert_int_eq(run_kvscope(r, NULL, NULL), 0);
    }
    for (int lv = 0; lv < KERN_LEVEL_COUNT; lv++) {
        const char *name = kern_name((KernLevel)lv);
        if (!kern_supported((KernLevel)lv)) {
            const char *r[] = {"run", "--quiet", "--kernels", name, "--out", b, NULL};
            ck_assert_int_eq(run_kvscope(r, NULL, errf), 2);
            char *err = read_file(errf, NULL);
            ck_assert_ptr_nonnull(err);
            ck_assert_msg(strncmp(err, "kvscope: --kernels ", 19) == 0 && strstr(err, name) &&
                              strchr(err, '\n') == err + strlen(err) - 1,
                          "stderr: %s", err);
            free(err);
            printf("check_cli.c: test_kernels: %s: refused (CPU lacks it)\n", name);
            continue;
        }
        for (int v = 0; v < 4; v++) {
            const char *wt = v & 1 ? "fp16" : "fp32", *what = v & 2 ? "all" : "logits,tokens,shapes";
            const char *r[] = {"run", "--quiet", "--layers", "2", "--dim", "192", "--heads", "6",
                               "--steps", "4", "--logits", "--weights", wt, "--record", what,
                               "--kernels", name, "--out", b, NULL};
            ck_assert_int_eq(run_kvscope(r, NULL, NULL), 0);
            for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
                if (!(v & 2) && i == 1) continue; /* no attention.csv without the recording */
                snprintf(fa, sizeof fa, "%s/%s", a[v], files[i]);
                snprintf(fb, sizeof fb, "%s/%s", b, files[i]);
                ck_assert_msg(files_equal(fa, fb), "--kernels %s --weights %s --record %s: "
                              "%s differs from the default run's", name, wt, what, files[i]);
            }
        }
    }
    remove_tree(dir);
}
END_TEST

/* The printed lines follow the articles: shapes and KV size per step. */
START_TEST(test_run_output) {
    char dir[64], out[128], so[128];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/o", dir);
    snprintf(so, sizeof so, "%s/stdout", dir);
    const char *args[] = {"run", "--prompt-ids", "1,2,3,4", "--steps", "1", "--out", out, NULL};
    ck_assert_int_eq(run_kvscope(args, so, NULL), 0);
    char *txt = read_file(so, NULL);
    ck_assert_ptr_nonnull(txt);
    /* 2 · 1 layer · 4 tokens · 768 · 4 bytes = 24 KiB; 5 tokens = 30 KiB */
    ck_assert_msg(strstr(txt, "prefill  T=4    q=[1,4,768] k=[1,4,768] v=[1,4,768]  kv 24.0 KiB"), "%s", txt);
    ck_assert_msg(strstr(txt, "decode 1 T=5    q=[1,1,768] k=[1,5,768] v=[1,5,768]  kv 30.0 KiB"), "%s", txt);
    free(txt);
    char kv[200];
    snprintf(kv, sizeof kv, "%s/kv_memory.csv", out);
    txt = read_file(kv, NULL);
    ck_assert_ptr_nonnull(txt);
    ck_assert_msg(strstr(txt, "prefill,0,4,24576,"), "%s", txt);
    ck_assert_msg(strstr(txt, "decode,1,5,30720,"), "%s", txt);
    free(txt);
    remove_tree(dir);
}
END_TEST

/* run ends with the text: the prompt, then what the model wrote, from tokens.csv's ids
 * shown as the labels show bytes (printable ASCII as is, other bytes as <0xXX>). */
START_TEST(test_run_prints_text) {
    char dir[64], out[128], so[128], path[200], line[128];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/o", dir);
    snprintf(so, sizeof so, "%s/stdout", dir);
    const char *args[] = {"run", "--prompt", "Hi there", "--steps", "6", "--heads", "2", "--dim", "16",
                          "--seed", "3", "--out", out, NULL};
    ck_assert_int_eq(run_kvscope(args, so, NULL), 0);
    snprintf(path, sizeof path, "%s/tokens.csv", out);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char want[256] = "\ncontinuation: ";
    int step, pos, id, n = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%d,%d,%d,", &step, &pos, &id) == 3 && step > 0) {
            size_t k = strlen(want);
            if ((id >= 0x20 && id < 0x7f) || id == '\n' || id == '\t') snprintf(want + k, sizeof want - k, "%c", id);
            else snprintf(want + k, sizeof want - k, "<0x%02X>", id);
            n++;
        }
    fclose(f);
    ck_assert_int_eq(n, 6);
    strcat(want, "\n");
    char *txt = read_file(so, NULL);
    ck_assert_ptr_nonnull(txt);
    ck_assert_msg(strstr(txt, "\nprompt:       Hi there\n"), "%s", txt);
    ck_assert_msg(strstr(txt, want), "want %s in:\n%s", want, txt);
    free(txt);
    remove_tree(dir);
}
END_TEST

/* A model folder with more than byte tokens and no vocab.json/merges.txt: a text prompt
 * is refused (exit 2, one line naming both files and --prompt-ids), ids still run and
 * print (an id past 255 as "<id 299>"), and a folder whose vocabulary is bytes still
 * reads text as bytes. */
START_TEST(test_folder_without_bpe) {
    char dir[64], m[128], err[128], so[128];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(m, sizeof m, "%s/m", dir);
    snprintf(err, sizeof err, "%s/err", dir);
    snprintf(so, sizeof so, "%s/out", dir);
    for (int bytes = 0; bytes <= 1; bytes++) {
        const char *ex[] = {"export", "--layers", "1", "--heads", "2", "--dim", "8", "--ctx", "16",
                            "--vocab", bytes ? "256" : "300", "--out", m, "--force", "--quiet", NULL};
        ck_assert_int_eq(run_kvscope(ex, NULL, NULL), 0);
        const char *text[] = {"run", "--model", m, "--prompt", "Hello world", "--steps", "1", NULL};
        ck_assert_int_eq(run_kvscope(text, so, err), bytes ? 0 : 2);
        char *e = read_file(err, NULL);
        ck_assert_ptr_nonnull(e);
        if (!bytes) {
            ck_assert_msg(strncmp(e, "kvscope: ", 9) == 0 && strchr(e, '\n') == e + strlen(e) - 1 &&
                              strstr(e, "vocab_size 300") && strstr(e, "vocab.json") &&
                              strstr(e, "merges.txt") && strstr(e, "--prompt-ids"),
                          "%s", e);
        } else {
            ck_assert_str_eq(e, "");
        }
        free(e);
        const char *ids[] = {"run", "--model", m, "--prompt-ids", "299,1", "--steps", "1", NULL};
        if (bytes) ids[4] = "255,1";
        ck_assert_int_eq(run_kvscope(ids, so, err), 0);
        char *o = read_file(so, NULL); /* an id past the bytes is shown as an id, not a byte */
        ck_assert_ptr_nonnull(o);
        ck_assert_msg(strstr(o, bytes ? "\nprompt:       <0xFF><0x01>\n" : "\nprompt:       <id 299><0x01>\n"),
                      "%s", o);
        free(o);
    }
    remove_tree(dir);
}
END_TEST

START_TEST(test_verify) {
    const char *ok[] = {"verify", "--steps", "5", "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(ok, NULL, NULL), 0);
    const char *buggy[] = {"verify", "--steps", "3", "--quiet", "--article-bug", NULL};
    ck_assert_int_eq(run_kvscope(buggy, NULL, NULL), 1);
}
END_TEST

/* The help of every command and the parser agree: each whole-number option the help
 * lists takes its stated default and the ends of its stated range, and refuses one past
 * either end (the parser reads the same table the help was printed from). */
START_TEST(test_help_matches_parser) {
    static const char *const cmds[] = {"run", "verify", "export", "budget", "compare", "batch", "kvmem",
                                       "train", "heads", "loss", "kvvalues", "copying"};
    char dir[64], so[128], se[128];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(so, sizeof so, "%s/stdout", dir);
    snprintf(se, sizeof se, "%s/stderr", dir);
    int checked = 0;
    for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
        const char *help[] = {cmds[c], "--help", NULL};
        ck_assert_int_eq(run_kvscope(help, so, NULL), 0);
        char *h = read_file(so, NULL);
        ck_assert_ptr_nonnull(h);
        for (char *p = strstr(h, "\n  --"); p; p = strstr(p + 1, "\n  --")) {
            char name[64], flat[2048];
            size_t k = 0;
            /* the option's lines, joined: up to the next option or heading */
            for (const char *q = p + 1; *q && k + 1 < sizeof flat; q++) {
                if (q > p + 1 && q[-1] == '\n' && (q[0] != ' ' || strncmp(q, "  --", 4) == 0)) break;
                flat[k++] = *q == '\n' ? ' ' : *q;
            }
            flat[k] = '\0';
            long lo, hi, def;
            char end = 0;
            const char *r = strrchr(flat, '(');
            /* a range of whole numbers: "(0..100," or "(0..100)", not "(0..1e+06," */
            if (sscanf(flat, " %63s", name) != 1 || !r || sscanf(r, "(%ld..%ld%c", &lo, &hi, &end) != 3 ||
                (end != ',' && end != ')'))
                continue;
            char v[4][32];
            int n = 0, want[4];
            snprintf(v[n], 32, "%ld", lo), want[n++] = 0;
            snprintf(v[n], 32, "%ld", hi), want[n++] = 0;
            snprintf(v[n], 32, "%ld", lo - 1), want[n++] = 2;
            snprintf(v[n], 32, "%ld", hi + 1), want[n++] = 2;
            const char *d = strstr(r, "default ");
            if (d && sscanf(d, "default %ld", &def) == 1) snprintf(v[0], 32, "%ld", def);
            for (int i = 0; i < n; i++) {
                const char *args[] = {cmds[c], name, v[i], "--help", NULL};
                int rc = run_kvscope(args, NULL, se);
                ck_assert_msg(rc == want[i], "%s %s %s: exit %d, want %d", cmds[c], name, v[i], rc, want[i]);
                checked++;
            }
        }
        free(h);
    }
    ck_assert_int_ge(checked, 4 * 30); /* every command's numbers, not a handful */
    remove_tree(dir);
}
END_TEST

/* kvscope info: the closed forms of a model and a prompt, against the library's own
 * counts (no weight is built, so a large model is instant). */
START_TEST(test_info) {
    char dir[64], so[128], se[128];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(so, sizeof so, "%s/stdout", dir);
    snprintf(se, sizeof se, "%s/stderr", dir);
    const char *args[] = {"info", "--layers", "12", "--heads", "16", "--dim", "1024", "--vocab", "50257",
                          "--prompt", "abcd", "--weights", "fp16", NULL};
    ck_assert_int_eq(run_kvscope(args, so, NULL), 0);
    char *t = read_file(so, NULL);
    ck_assert_ptr_nonnull(t);
    const Config cfg = tiny_config(12, 16, 1024, 1024, 50257);
    char want[1024];
    snprintf(want, sizeof want,
             "key,value\nL,12\nNH,16\nC,1024\nhs,64\nN,1024\nV,50257\nqkv_width,3072\nmlp_width,4096\n"
             "params,%zu\nweights,fp16\nweight_bytes_decode,%llu\nkv_bytes_per_token,%d\n"
             "kv_flops_share,0.166666667\nprompt_tokens,4\nattention_square,16\nattention_causal,10\n"
             "attention_causal_heads,160\n",
             model_num_params(&cfg), (unsigned long long)model_weight_bytes_read(&cfg, DT_FP16, 1),
             2 * 12 * 1024 * 4);
    ck_assert_str_eq(t, want);
    free(t);
    const char *bad[] = {"info", "--model", "/nonexistent/gpt2", NULL};
    ck_assert_int_eq(run_kvscope(bad, NULL, se), 2);
    /* a context shorter than the default prompt: info cuts its own text to the context
     * (12 bytes "The KV cache" to 8), export reads no prompt at all; a prompt the user
     * gives must fit */
    const char *short_ctx[] = {"info", "--ctx", "8", NULL};
    ck_assert_int_eq(run_kvscope(short_ctx, so, se), 0);
    t = read_file(so, NULL);
    ck_assert_msg(t && strstr(t, "\nprompt_tokens,8\nattention_square,64\n"), "%s", t);
    free(t);
    const char *given[] = {"info", "--ctx", "8", "--prompt", "The KV cache", NULL};
    ck_assert_int_eq(run_kvscope(given, so, se), 2);
    t = read_file(se, NULL);
    ck_assert_msg(t && strcmp(t, "kvscope: prompt longer than the context (8 tokens): 12 tokens\n") == 0,
                  "%s", t);
    free(t);
    char m[128];
    snprintf(m, sizeof m, "%s/m", dir);
    const char *ex[] = {"export", "--layers", "1", "--heads", "2", "--dim", "8", "--ctx", "8",
                        "--out", m, "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(ex, so, se), 0);
    const char *ex_prompt[] = {"export", "--ctx", "8", "--prompt", "x", "--out", m, NULL};
    ck_assert_int_eq(run_kvscope(ex_prompt, so, se), 2); /* no such option: export runs nothing */
    remove_tree(dir);
}
END_TEST

/* kvscope format: the marked numbers, the way kvscope writes every number for people. */
START_TEST(test_format) {
    char dir[64], in[128], so[128], se[128], f[128];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(in, sizeof in, "%s/in", dir);
    snprintf(so, sizeof so, "%s/stdout", dir);
    snprintf(se, sizeof se, "%s/stderr", dir);
    snprintf(f, sizeof f, "%s/t.md", dir);
    const char *text = "| {{digits 1234567}} | {{bytes 1536}} | {{bytes 1073741824}} | {{kib 98304}} |\n"
                       "{{digits 0}} {{bytes 999}} {{kib 1536}} {{other 5}} {{digits\n";
    const char *want = "| 1,234,567 | 1.50 KiB | 1.00 GiB | 96 |\n0 999 B 1.5 {{other 5}} {{digits\n";
    ck_assert_int_eq(write_text_file(f, text), 0);
    const char *inplace[] = {"format", f, NULL};
    ck_assert_int_eq(run_kvscope(inplace, NULL, NULL), 0);
    char *t = read_file(f, NULL);
    ck_assert_str_eq(t, want);
    free(t);
    ck_assert_int_eq(count_entries(dir), 1); /* rewritten in place: nothing beside it */
    /* a bad value: refused with its line, the file left as it was */
    ck_assert_int_eq(write_text_file(f, "a\nb\n{{digits 1e3}}\n"), 0);
    ck_assert_int_eq(run_kvscope(inplace, NULL, se), 2);
    t = read_file(se, NULL);
    ck_assert_msg(strstr(t, f) && strstr(t, ":3\n") && strchr(t, '\n') == t + strlen(t) - 1, "%s", t);
    free(t);
    t = read_file(f, NULL);
    ck_assert_str_eq(t, "a\nb\n{{digits 1e3}}\n");
    free(t);
    const char *bad[] = {"{{digits -1}}", "{{bytes 18446744073709551616}}", "{{kib x}}"};
    for (size_t i = 0; i < 3; i++) {
        ck_assert_int_eq(write_text_file(f, bad[i]), 0);
        ck_assert_msg(run_kvscope(inplace, NULL, NULL) == 2, "%s passed", bad[i]);
    }
    remove_tree(dir);
}
END_TEST

/* stdout on a full disk (/dev/full): every command that prints exits 2 with one line
 * saying so, instead of 0 with nothing written. */
START_TEST(test_stdout_full) {
    struct stat st;
    if (stat("/dev/full", &st) != 0 || !S_ISCHR(st.st_mode)) {
        TEST_SKIPPED("no /dev/full here");
        return;
    }
    char dir[64], se[128];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(se, sizeof se, "%s/stderr", dir);
    const struct { const char *args[16]; } cases[] = {
        {{"info", NULL}},
        {{"kvmem", NULL}},
        {{"--help", NULL}},
        {{"--version", NULL}},
        {{"run", "--help", NULL}},
        {{"run", "--layers", "1", "--heads", "2", "--dim", "16", "--vocab", "256", "--steps", "1", NULL}},
        {{"verify", "--layers", "1", "--heads", "2", "--dim", "16", "--vocab", "256", "--steps", "1", NULL}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = run_kvscope(cases[i].args, "/dev/full", se);
        ck_assert_msg(rc == 2, "%s > /dev/full: exit %d", cases[i].args[0], rc);
        char *e = read_file(se, NULL);
        ck_assert_msg(e && strcmp(e, "kvscope: cannot write (No space left on device): stdout\n") == 0,
                      "%s: %s", cases[i].args[0], e);
        free(e);
    }
    remove_tree(dir);
}
END_TEST

/* format FILE keeps the file's mode and owner, and through a symlink formats the file
 * it points to and keeps the link. */
START_TEST(test_format_keeps_file) {
    char dir[64], f[128], link[128];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(f, sizeof f, "%s/t.md", dir);
    snprintf(link, sizeof link, "%s/link.md", dir);
    ck_assert_int_eq(write_text_file(f, "{{digits 1234}}\n"), 0);
    ck_assert_int_eq(chmod(f, 0600), 0);
    int owned = geteuid() == 0 && chown(f, 1234, 2345) == 0; /* another owner: root only */
    ck_assert_int_eq(symlink("t.md", link), 0);
    const char *args[] = {"format", link, NULL};
    ck_assert_int_eq(run_kvscope(args, NULL, NULL), 0);
    struct stat st;
    ck_assert_int_eq(lstat(link, &st), 0);
    ck_assert_msg(S_ISLNK(st.st_mode), "the symlink became a file");
    ck_assert_int_eq(lstat(f, &st), 0);
    ck_assert_int_eq(st.st_mode & 07777, 0600);
    if (owned) {
        ck_assert_int_eq(st.st_uid, 1234);
        ck_assert_int_eq(st.st_gid, 2345);
    } else {
        TEST_SKIPPED("not root: the owner case (a file of another user)");
    }
    char *t = read_file(f, NULL);
    ck_assert_str_eq(t, "1,234\n");
    free(t);
    ck_assert_int_eq(count_entries(dir), 2);
    remove_tree(dir);
}
END_TEST

Suite *make_cli_suite(void) {
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("cli");
    tcase_set_tags(tc, "bin"); /* runs bin/kvscope: not in make test */
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_bad_input, 0, (int)(sizeof bad / sizeof bad[0]));
    tcase_add_test(tc, test_bad_out);
    tcase_add_test(tc, test_deterministic);
    tcase_add_test(tc, test_kernels);
    tcase_add_test(tc, test_run_output);
    tcase_add_test(tc, test_run_prints_text);
    tcase_add_test(tc, test_verify);
    tcase_add_test(tc, test_folder_without_bpe);
    tcase_add_test(tc, test_info);
    tcase_add_test(tc, test_format);
    tcase_add_test(tc, test_stdout_full);
    tcase_add_test(tc, test_format_keeps_file);
    suite_add_tcase(s, tc);
    /* some 330 runs of bin/kvscope: 0.75 s each under SAN=1 on a loaded 2-core machine */
    tc = tcase_create("help");
    tcase_set_tags(tc, "bin");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_help_matches_parser);
    suite_add_tcase(s, tc);
    return s;
}
