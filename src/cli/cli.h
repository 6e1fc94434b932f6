/* cli.h — what every subcommand shares: the error line, the model options and loading,
 * the output folders. The command line (src/cli/) is the only layer that prints to the
 * user and decides exit codes, by one rule (EXIT_STATUS_HELP):
 *   0  success
 *   1  the check failed (verify, batch: the logits differ)
 *   2  bad input or an environment error: a bad option or file, a folder kvscope may
 *      not replace, a full disk, out of memory, non-finite logits
 * each failure with one line on stderr, "kvscope: <problem>: <path or value>", naming
 * the path as the user gave it (never a temporary name). Options are parsed by
 * options.h's tables. */
#ifndef KVSCOPE_CLI_H
#define KVSCOPE_CLI_H

#include <stdint.h>

#include "model.h"
#include "options.h"
#include "outdir.h"
#include "tokenizer.h"

/* Print "kvscope: <what>: <value>" on stderr; returns 2 (bad input). */
int cli_fail(const char *what, const char *value);
/* Print "kvscope: <msg>" (a library's message, already "<what>: <path>"); returns 2. */
int cli_error(const char *msg);

/* The options that choose a model and a prompt, shared by every subcommand. */
typedef struct {
    Config cfg;
    uint64_t seed;
    const char *prompt;      /* text, tokenized by the model's tokenizer */
    const char *prompt_ids;  /* or ids given directly: "1,2,3" */
    const char *prompt_option; /* which of --prompt, --prompt-ids came last; NULL: neither
                              * (then the ids when there are default ids, else the text) */
    const char *model_dir;   /* a Hugging Face GPT-2 folder instead of built-in weights */
    const char *cfg_option;  /* the last of --layers/--heads/--dim/--ctx/--vocab given */
    Dtype weights;       /* --weights: fp32, or the half type the matrices are rounded to */
    int kernels;             /* --kernels: a KernLevel (kernels.h), or -1: kern_detect's */
    int fit_prompt;          /* 1: cut a prompt longer than the context to it (a command's
                              * own default text), instead of refusing it */
    int no_prompt;           /* 1: the command reads no prompt (export): none is tokenized
                              * or checked against the context */
} ModelArgs;

/* --kernels LEVEL (OPT_CHOICE into an int): a KernLevel's name, or auto: -1. */
int cli_parse_kernels(const char *s, void *f);
const char *cli_show_kernels(const void *f);
#define CLI_KERNELS_CHOICES "plain, avx2, avx512, auto"
#define CLI_KERNELS_HELP                                                                    \
    "plain: ops.c's loops, the code to read; avx2, avx512: their vector twins; auto: the " \
    "best this CPU has. Every level gives the same results, bit for bit"
/* 0 when this CPU runs level lv (-1: auto), else the error line and 2. */
int cli_kernels_check(int lv);

/* The built-in model (config_default), seed 1, the prompt "The KV cache". */
void model_args_default(ModelArgs *a);
/* The options of a ModelArgs: "model and prompt" (--prompt, --prompt-ids, then the
 * model's); MODEL_ONLY_OPTIONS without the prompt, for a command that takes its own. */
extern const Option MODEL_OPTIONS[];
extern const Option MODEL_ONLY_OPTIONS[];

typedef struct {
    Model model;
    Tokenizer *tok;
    int *prompt;  /* token ids */
    int T;        /* prompt length */
} Loaded;

/* What a chart's title calls the model: "the built-in random model" (no --model), "the
 * byte-level model" or "the GPT-2 model (BPE tokens)" — what it is, never a path. */
const char *model_args_words(const ModelArgs *a, const Loaded *ld);

/* Build (or load) the model, its tokenizer, and the prompt's ids; check that
 * `steps` decode steps fit the context. 0, or 2 (bad input, out of memory) with the error printed. */
int model_args_load(const ModelArgs *a, int steps, Loaded *out);
/* The same without the weights: the model's shape into *cfg, the tokenizer and the
 * prompt into out (out->model stays empty). 0, or 2 with the error printed. */
int model_args_prompt(const ModelArgs *a, int steps, Config *cfg, Loaded *out);
void loaded_free(Loaded *l);

/* The exit-status rule, for every --help. */
extern const char *const EXIT_STATUS_HELP;

/* ---- output folders (outdir.h): checked before any work, then begun, then ended ---- */

/* Check path as command's output folder `option` (flags: OUTDIR_*; OUTDIR_FORCE for
 * --force). 0, or 2 after the error line. */
int cli_outdir_check(OutDir *od, const char *path, const char *command, const char *option,
                     unsigned flags);
/* 2 after an error line when the two output folders overlap (the same folder, or one
 * inside the other, however spelled), else 0. */
int cli_outdirs_apart(const OutDir *a, const OutDir *b);
/* 2 after an error line when od would replace the input path given with option (a
 * --model folder, a --prompts file), else 0. path NULL: 0. */
int cli_outdir_spares(const OutDir *od, const char *option, const char *path);
/* A command that reads a text and draws one chart (loss, copying): --out (and --plots
 * when sep) may be replaced, lie apart and spare the --model folder, the --text file and
 * the chart script SCRIPTS/GP; gnuplot is there and the script reads. Before any work.
 * 0, or 2 after the error line. */
typedef struct {
    const char *command, *out, *plots, *model_dir, *text, *scripts, *gp;
    int force, sep;
} TextChartOutputs;
int cli_text_chart_outputs(const TextChartOutputs *t, OutDir *od, OutDir *op);
/* "kvscope: note: cannot remove what a killed run left: <left>" when n > 0 (OutDir.left,
 * OutFile.left: a leftover beside an output that stays). */
void cli_note_left(const char *left, int n);
/* Create od's temporary folder (outdir_begin), with the note of cli_note_left. 0, or 2
 * after the error line. */
int cli_outdir_begin(OutDir *od);
/* The end of a command that writes its files into od: when status is 0, they closed
 * cleanly (close_failed 0) and everything printed so far reached stdout (flushed here:
 * `run --out prev > /dev/full` keeps prev), swap the folder in; otherwise, or when the swap fails, remove
 * it, with the reason in one line on stderr. Returns the command's status: status, or 2
 * when the write or the swap failed. Call with errno as the failed close left it. */
int cli_outdir_end(OutDir *od, int status, int close_failed);
/* "kvscope: <msg>" with od's temporary folder named as the user named od. */
void cli_outdir_error(const OutDir *od, const char *msg);
/* Run the chart script with vars (gnuplot_run) to draw NAME.png and NAME.svg into the
 * begun folder dir. 0 when both were written; else the error line (the script failed, or
 * ran and drew nothing: an empty script does) and 2. */
int cli_chart(const OutDir *dir, const char *script, const char *vars, const char *name);

/* The chart scripts' folder: *scripts as given (--scripts), or when NULL the plots/
 * folder of kvscope's install: BIN/../plots, else BIN/../../plots (build/<variant>/kvscope),
 * BIN the folder of the running binary (/proc/self/exe), the first that holds style.gp,
 * resolved into buf. Never the current folder's: scripts run whatever they say. 0 with
 * *scripts set, or 2 after the error line. */
int cli_scripts(const char **scripts, char *buf, size_t size);
/* The same search without a message: 0 with the folder in buf, or -1 with the first
 * place looked in (BIN/../plots) in buf, for a command whose charts are optional. */
int cli_find_scripts(char *buf, size_t size);

/* ---- steps of the engine ------------------------------------------------------ */

/* The line for a failed generator step (what: "prefill", "decode step 3"): non-finite
 * logits, the cache's cap, or out of memory. Returns 2. */
int cli_step_failed(int rc, const char *what, const float *logits, int V);

/* ---- output files (outdir.h's one rule): never an input of the same command ---- */

/* 2 after an error line naming both when the output file out (given with out_option)
 * is the input in (given with in_option), by path or by device and inode; else 0. in
 * NULL: 0. */
int cli_outfile_spares(const char *out, const char *out_option, const char *in_option,
                       const char *in);
/* The same for each file a --model folder holds (config.json, model.safetensors,
 * vocab.json, merges.txt). model_dir NULL: 0. */
int cli_outfile_spares_model(const char *out, const char *out_option, const char *model_dir);

#endif
