/* cli.h — what every subcommand shares: option values, the model options, and the
 * error line. The CLI is the only layer that prints to the user and decides exit
 * codes: 0 ok, 1 a failure while running (out of memory, a write error), 2 bad input. */
#ifndef KVSCOPE_CLI_H
#define KVSCOPE_CLI_H

#include <stdint.h>

#include "model.h"
#include "outdir.h"
#include "tokenizer.h"

/* Print "kvscope: <what>: <value>" on stderr; returns 2 (bad input). */
int cli_fail(const char *what, const char *value);
/* The value after option argv[*i], advancing *i; NULL (and an error line) if missing. */
const char *cli_value(int argc, char **argv, int *i);
/* Parse a whole decimal integer in [lo, hi]. 0, or 2 after an error line naming opt and s. */
int cli_long(const char *opt, const char *s, long lo, long hi, long *out);
int cli_double(const char *opt, const char *s, double lo, double hi, double *out);
/* "1,2,3" → ids (malloc'ed). 0, or 2 after an error line. */
int cli_int_list(const char *opt, const char *s, long lo, long hi, int **out, int *n);

/* The options that choose a model and a prompt, shared by every subcommand. */
typedef struct {
    Config cfg;
    uint64_t seed;
    const char *prompt;      /* text, tokenized by the model's tokenizer */
    const char *prompt_ids;  /* or ids given directly: "1,2,3" */
    const char *model_dir;   /* a Hugging Face GPT-2 folder instead of built-in weights */
    const char *cfg_option;  /* the last of --layers/--heads/--dim/--ctx/--vocab given */
    KernDtype weights;       /* --weights: fp32, or the half type the matrices are rounded to */
} ModelArgs;

void model_args_default(ModelArgs *a);
/* If argv[*i] is a model option, consume it and its value: returns 1. 0 if it is not
 * a model option. 2 after an error line on a bad value. */
int model_args_parse(ModelArgs *a, int argc, char **argv, int *i);
/* Lines of help for the model options. */
extern const char *const MODEL_ARGS_HELP;

typedef struct {
    Model model;
    Tokenizer *tok;
    int *prompt;  /* token ids */
    int T;        /* prompt length */
} Loaded;

/* Build (or load) the model, its tokenizer, and the prompt's ids; check that
 * `steps` decode steps fit the context. 0, 1 (failure) or 2 (bad input), error printed. */
int model_args_load(const ModelArgs *a, int steps, Loaded *out);
void loaded_free(Loaded *l);

/* 1234567 → "1,234,567". Returns buf. */
/* The end of a command that writes its files into od: when status is 0 and they closed
 * cleanly (close_failed 0), swap the folder in; otherwise, or when the swap fails, remove
 * it, with the reason in one line on stderr. Returns the command's status: status, or 1
 * when the write or the swap failed. */
int cli_outdir_end(OutDir *od, int status, int close_failed);

const char *group_digits(uint64_t v, char *buf, size_t size);
/* Human units, binary: "24.0 KiB", "1.00 GiB". Returns buf. */
const char *human_bytes(double bytes, char *buf, size_t size);

#endif
