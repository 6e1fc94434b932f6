/* main.c — bin/kvscope: dispatch to a subcommand. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "outdir.h"
#include "version.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *what;
} commands[] = {
    {"run", cmd_run, "prefill + greedy decode, print shapes and KV size, write CSVs"},
    {"verify", cmd_verify, "check that the KV cache gives the same logits as recomputing"},
    {"export", cmd_export, "write the model as a Hugging Face GPT-2 folder (safetensors)"},
    {"budget", cmd_budget, "KV cache in fp16/bf16/int8/q8_0 or a window: bytes vs logit error"},
    {"compare", cmd_compare, "FLOPs and time per decode step with and without the cache"},
    {"batch", cmd_batch, "many sequences at once: padded cache + mask, paged cache, prefix reuse"},
    {"kvmem", cmd_kvmem, "KV-cache size of real models (GPT-2, LLaMA-2-7B, custom, GQA)"},
    {"info", cmd_info, "the closed forms of a model and a prompt: sizes, bytes, FLOP shares"},
    {"format", cmd_format, "write the numbers marked in a lesson's files for people"},
    {"train", cmd_train, "train a byte-level GPT-2 on a text file (checkpoints, log, chart)"},
    {"heads", cmd_heads, "what each attention head does: previous token, induction, sink"},
    {"loss", cmd_loss, "loss at every position: full cache vs a window with and without sinks"},
    {"copying", cmd_copying, "greedy copying of many sentences: full cache, forgetful, a window"},
    {"kvvalues", cmd_kvvalues, "K and V channel by channel; int8 per token vs per channel"},
    {"frontier", cmd_frontier, "quality per KV byte: precision, eviction policies, head groups"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: kvscope <command> [options]   (kvscope <command> --help)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].what);
    fprintf(f, "\n  --help     this text\n  --version  kvscope's version\n\n%s", EXIT_STATUS_HELP);
}

static int dispatch(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("kvscope %s\n", KVSCOPE_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].fn(argc - 2, argv + 2);
    fprintf(stderr, "kvscope: unknown command: %s\n", argv[1]);
    return 2;
}

/* What a command printed must have reached stdout: a full disk or /dev/full is an
 * error (exit 2, one line), not a silent exit 0 with a short file. The flush happens
 * here, before exit() would do it without a word. A command stopped by a signal keeps
 * its status (128 + the signal). */
static int stdout_status(int rc) {
    if (rc > 128) return rc; /* stopped by a signal (train), maybe the SIGPIPE of stdout itself */
    errno = 0;
    int bad = fflush(stdout) != 0, e = errno;
    if (!bad && !ferror(stdout)) return rc;
    if (fcntl(STDOUT_FILENO, F_GETFL) < 0) e = EBADF; /* closed (>&-): not a full disk */
    if (rc != 2) /* a command that failed has said why already */
        fprintf(stderr, "kvscope: cannot write (%s): stdout\n", write_error_text(e));
    return 2;
}

int main(int argc, char **argv) { return stdout_status(dispatch(argc, argv)); }
