/* record_csv.h — an observer that writes one run as CSV files into one folder.
 *
 * Files (columns may be added at the end later, never renamed; floats as %.9g,
 * 9 significant digits, which read back to the same float32 bits; numfmt.h writes
 * them without printf):
 *   shapes.csv     phase,step,layer,name,shape            every hooked tensor, shape "1x4x12x64"
 *   attention.csv  phase,step,layer,head,query_pos,key_pos,score,weight,key_slot
 *                  causal entries only; key_slot is the cache row, key_pos the position it holds
 *   kv_memory.csv  phase,step,tokens,kv_bytes,kv_reserved_bytes,kv_bytes_per_token
 *   flops.csv      phase,step,tokens_new,tokens_total,flops_layers,flops_lm_head,
 *                  flops_elementwise,flops_qkv,flops_attn,flops_attn_proj,flops_mlp
 *   tokens.csv     step,pos,token_id,text
 *   logits.csv     phase,step,token_id,logit              last position of each step
 *   timing.csv     phase,step,seconds,rss_bytes           measured: differs run to run
 * Everything but timing.csv is a pure function of model, prompt and options.
 * The folder is written by the caller's OutDir; this module only writes files.
 */
#ifndef KVSCOPE_RECORD_CSV_H
#define KVSCOPE_RECORD_CSV_H

#include <stdio.h>

#include "hooks.h"
#include "select.h"

enum {
    REC_SHAPES = 1 << 0,
    REC_ATTENTION = 1 << 1,
    REC_KV = 1 << 2,
    REC_FLOPS = 1 << 3,
    REC_TOKENS = 1 << 4,
    REC_LOGITS = 1 << 5,
    REC_TIMING = 1 << 6,
    REC_DEFAULT = REC_SHAPES | REC_ATTENTION | REC_KV | REC_FLOPS | REC_TOKENS | REC_TIMING
};

/* The words of a --record list. */
#define RECORD_KINDS "shapes, attention, kv, flops, tokens, logits, timing"
/* Parse a comma-separated list of RECORD_KINDS, or "all" or "none".
 * 0, or -1 naming nothing known. */
int record_parse(const char *spec, unsigned *what);

typedef struct {
    unsigned what;
    Selection layers, heads;
    FILE *shapes, *attention, *kv, *flops, *tokens, *logits, *timing;
    float *scores;        /* copy of the last hook_attn_scores, read when the pattern arrives */
    size_t scores_cap;
    char *chunk;          /* rows of attention.csv and logits.csv, written 64 KiB at a time */
    int err;              /* errno of the first failed write; 0 while every write succeeded */
} CsvRecorder;

/* Open the selected files in dir and write their headers. 0, or -1 (errno set). */
int csv_recorder_open(CsvRecorder *r, const char *dir, unsigned what,
                      const Selection *layers, const Selection *heads);
/* Subscribe to the hook points it needs. 0 or -1. */
int csv_recorder_attach(CsvRecorder *r, Hooks *h);
/* Rows the engine cannot know: the tokens and the measured time of a step. */
void csv_recorder_token(CsvRecorder *r, int step, int pos, int token_id, const char *text);
void csv_recorder_timing(CsvRecorder *r, Phase ph, int step, double seconds, size_t rss);
/* The errno of the first write that failed (a full disk: ENOSPC), 0 when none has. A
 * hook event after a failed write returns -1, which stops the engine's step: a run
 * stops at the first failed write, not after computing every step. */
int csv_recorder_error(CsvRecorder *r);
/* Close every file. 0 if everything was written, -1 otherwise. */
int csv_recorder_close(CsvRecorder *r);

/* Write s as one CSV field (quoted when it holds a comma, quote, or newline). */
void csv_write_field(FILE *f, const char *s);

#endif
