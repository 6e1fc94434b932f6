/* train.h — GPT-2 training on the engine's own structs.
 *
 * The model is the engine's Model (model.h): the same Config, the same weight blob laid
 * out by model_tensor_specs under Hugging Face's names, lm_head tied to wte. The
 * forward pass of a batch runs the engine's kernels (kernels.h) row for row as
 * model_forward does, so its logits are the engine's bytes; it keeps what the backward
 * needs in TrainActs. The backward (train_ops.h, train_kernels.h) mirrors it from the
 * loss down to the embeddings; AdamW updates the blob in place.
 *
 * Dimension letters: B sequences of T tokens, T = N (the context), C channels, NH
 * heads of hs = C/NH, L layers, V = 256 byte tokens.
 *
 * Deterministic: every sum has a fixed order and threads split outputs, so the same
 * corpus, options and seed give the same bytes at any thread count.
 */
#ifndef KVSCOPE_TRAIN_H
#define KVSCOPE_TRAIN_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "corpus.h"
#include "model.h"
#include "outdir.h"

typedef struct {
    int B;              /* sequences per batch */
    int steps;          /* optimizer steps in all */
    float lr;           /* peak learning rate */
    int warmup;         /* steps of linear warm-up from lr/warmup to lr */
    float lr_final;     /* the rate at the last step, as a fraction of lr (cosine decay) */
    float weight_decay; /* decoupled, on the 2-D weights only (wte, wpe, the matrices) */
    float beta1, beta2, eps;
    float clip;         /* global gradient norm clipped to this; 0: no clipping */
    uint64_t seed;      /* initial weights and batches */
    float init_std;     /* initial N(0, init_std) of matrices and embeddings (GPT-2: 0.02) */
    int eval_every;     /* validation loss every this many steps, and after the last */
    uint64_t corpus_size, corpus_hash; /* the corpus (Corpus.size, .hash): a checkpoint keeps
                                        * them, and --resume refuses another corpus */
    int bos;            /* start byte in front of every sequence (position 0), or -1: none */
    /* the batches after the short phase (corpus.h, CorpusMix) */
    float repeat_share; /* share of each batch's sequences that repeat a segment */
    float span_share;   /* share of those whose segment is a span of the text */
    int period_min, period_max; /* each repeat's period, uniform in [min, max] */
    /* the short phase first: a copying curriculum at a short context */
    int short_steps;    /* its steps (0: none) */
    int short_ctx;      /* its tokens per sequence (positions 0 .. short_ctx − 1) */
    int short_B;        /* its sequences per batch: short_B·short_ctx <= B·N (the buffers) */
    float short_repeat_share, short_span_share; /* its mix; periods up to short_ctx/2 */
    int heads_every;    /* head scores (trainer_head_scores) every this many steps; 0: never */
    /* the copying curriculum, from step copy_from on (after the short phase) */
    int copy_from;      /* the first step (0-based) with the two kinds below */
    float alpha_share;  /* share of the random repeats drawn from a small alphabet */
    int alpha_min, alpha_max; /* its symbols per sequence, uniform in [min, max] */
    float embed_share;  /* share of each batch's sequences: text with one span repeated once */
    int embed_min, embed_max; /* that span's length, uniform in [min, max] */
} TrainOptions;

TrainOptions train_options_default(void);
/* The batch of step s (0-based) for a model of context N: while s < short_steps,
 * short_B sequences of short_ctx tokens with the short phase's shares and periods in
 * [period_min, min(period_max, short_ctx/2)]; then B sequences of N tokens with the main
 * shares, and from step copy_from on (not in the short phase) the small-alphabet share of
 * the random repeats and the embedded repeats (at most the sequences that do not repeat).
 * A share of the sequences is round(share · sequences). */
CorpusMix train_mix(const TrainOptions *o, int s, int N);
/* The learning rate of step s (0-based): linear warm-up lr·(s+1)/warmup, then cosine
 * from lr down to lr·lr_final at the last step. */
float train_lr(const TrainOptions *o, int s);

/* What the backward needs from the forward, and its own buffers: one allocation. */
typedef struct {
    float *encoded;               /* (B,T,C) wte[token] + wpe[pos]: block 0's input */
    float *ln1, *ln1_mean, *ln1_rstd; /* (L,B,T,C), (L,B,T), (L,B,T) */
    float *q, *k, *v;             /* (L,B,T,C) c_attn's output, split, heads side by side */
    float *att;                   /* (L,B,NH,T,T) softmax weights, future cells 0 */
    float *atty;                  /* (L,B,T,C) attention output */
    float *resid2;                /* (L,B,T,C) the residual stream after attention */
    float *ln2, *ln2_mean, *ln2_rstd; /* (L,B,T,C), (L,B,T), (L,B,T) */
    float *fch, *fch_gelu;        /* (L,B,T,4C) c_fc's output, after GELU */
    float *resid3;                /* (L,B,T,C) block output */
    float *lnf, *lnf_mean, *lnf_rstd; /* (B,T,C), (B,T), (B,T) */
    float *logits, *probs;        /* (B,T,V) */
    float *losses;                /* (B,T) in nats */
    /* forward scratch, reused by every layer */
    float *qkv;                   /* (B,T,3C) c_attn's output */
    float *proj;                  /* (B,T,C) c_proj's output */
    float *scores;                /* (nscratch,NH,T,T) per thread: a sequence's raw scores */
    /* backward buffers */
    float *dresid;                /* (B,T,C) gradient of the residual stream */
    float *dln, *datty;           /* (B,T,C) */
    float *dq, *dk, *dv;          /* (B,T,C) */
    float *dqkv;                  /* (B,T,3C) */
    float *dfch;                  /* (B,T,4C) */
    float *dpre;                  /* (B,NH,T,T) gradient of the scores */
    float *dlogits;               /* (B,T,V) */
    float *scratch;               /* (nscratch, tk_attention_scratch) */
} TrainActs;

/* The backward's weights in column panels (train_kernels.h), per layer. */
typedef struct {
    float *c_attn_t, *attn_proj_t, *c_fc_t, *mlp_proj_t; /* each matrix transposed */
} BlockPanels;

/* Where a training step's time goes: the forward by kind of kernel, each backward op
 * (summed over the layers), the update. */
enum { TP_FWD_MATMUL, TP_FWD_ATTENTION, TP_FWD_OTHER, /* forward: layernorm, GELU, loss, ... */
       TP_ZERO_GRADS, TP_XENT, TP_LM_HEAD, TP_LAYERNORM, TP_MLP_PROJ, TP_GELU, TP_C_FC,
       TP_ATTN_PROJ, TP_ATTENTION, TP_QKV_JOIN, TP_C_ATTN, TP_ENCODER, /* backward */
       TP_ADAMW, TP_PANELS, /* update */
       TP_N };
typedef struct {
    double wall[TP_N], cpu[TP_N]; /* seconds (wall clock, process CPU) summed over calls */
} TrainProfile;
/* A phase's name ("bwd_c_fc", ...), or "?" out of range. */
const char *train_phase_name(int phase);

typedef struct {
    Model model;      /* config, parameters (model.w.blob) and the forward's panels */
    int B, T;         /* the batch of the next forward (trainer_set_batch) */
    int B0;           /* sequences the buffers hold at T = N */
    float *grads;     /* (num_params) as the blob: grads + (p − blob) is p's gradient */
    float *m, *v;     /* AdamW moments, the same layout */
    TrainActs a;
    float *acts;      /* the one allocation behind a */
    float *panels;    /* behind bp and wte_p, or NULL (plain kernels) */
    BlockPanels *bp;  /* (L) */
    float *wte_p;     /* wte (V,C) in panels, for the lm_head's input gradient */
    int *inputs, *targets; /* (B,T) the batch of the last forward */
    TensorSpec *specs;     /* (nspecs) the blob's tensors, model_tensor_specs */
    int nspecs;
    KernLevel lv;     /* the training kernels' level (kern_detect: the engine's levels) */
    int nscratch;     /* threads the attention forward and backward may use */
    TrainProfile *prof; /* NULL (the default), or where each phase's seconds are added */
} Trainer;

/* Results of the functions below. */
enum { TRAIN_OK = 0, TRAIN_NOMEM = -2, TRAIN_NONFINITE = -4, TRAIN_STOPPED = -5, TRAIN_IO = -3,
       TRAIN_BAD = -1, TRAIN_OTHER_RUN = -6, TRAIN_OLD_VERSION = -7 };

/* A model of shape cfg (T = cfg->N) for batches of B, with GPT-2's initialisation drawn
 * from seed: matrices and embeddings N(0, 0.02), the two c_proj matrices N(0, 0.02/√(2L)),
 * biases 0, layernorm weights 1 (streams as model_init_random, rng.h). 0 or TRAIN_NOMEM. */
int trainer_init(Trainer *tr, const Config *cfg, int B, uint64_t seed);
/* The same with matrices and embeddings N(0, std), the c_proj matrices N(0, std/√(2L)). A
 * wider start than GPT-2's 0.02 shortens the plateau before copying (induction) heads form:
 * a head's query·key grows from the product of two initial matrices. */
int trainer_init_std(Trainer *tr, const Config *cfg, int B, uint64_t seed, double std);
/* Train with the kernels of level lv (the model's, model_set_kernels, and the
 * backward's): the same bytes at every level. 0, or -1 (this CPU lacks lv, out of memory). */
int trainer_set_kernels(Trainer *tr, KernLevel lv);
void trainer_free(Trainer *tr);

/* After the blob was written from outside (a checkpoint, a test): the panels follow. */
void trainer_weights_changed(Trainer *tr);
/* Forward pass of a batch: inputs (B,T); with targets (B,T) the mean loss in nats is
 * returned (and the activations kept for trainer_backward), without it 0 (logits only). */
float trainer_forward(Trainer *tr, const int *inputs, const int *targets);
/* The gradient of the mean loss of the last forward (with targets) into tr->grads. */
void trainer_backward(Trainer *tr);
/* √(Σ g²) over every parameter, summed in double in fixed chunks. */
double trainer_grad_norm(const Trainer *tr);
/* Gradient clipping: when clip > 0 and norm (trainer_grad_norm's) > clip, every gradient
 * is scaled by clip / norm, so the norm becomes clip and the direction stays; else
 * nothing changes. */
void trainer_clip_grads(Trainer *tr, float clip, double norm);
/* AdamW step t (1, 2, ...) at rate lr, then the panels follow the new weights. */
void trainer_update(Trainer *tr, const TrainOptions *o, float lr, int t);

/* One row of the training log. */
typedef struct {
    int step;          /* 1, 2, ...: optimizer steps done */
    float train_loss;  /* nats, the batch's mean */
    float val_loss;    /* nats, over the validation windows; NaN when not evaluated */
    float lr, grad_norm; /* the rate used, the norm before clipping */
    float tokens_per_s;  /* B·T over the step's time, evaluation left out (measured) */
    double seconds;    /* wall clock since the run started, resumed runs included (measured) */
    float induction, prev_token, sink; /* trainer_head_scores' best heads; NaN when not measured */
} TrainLogRow;

typedef struct {
    TrainLogRow *rows;
    int n, cap;
} TrainLog;

void train_log_free(TrainLog *log);

/* Mean loss (nats) over the first `windows` validation windows (all: corpus_val_windows),
 * with the start byte bos (or -1) in front as in training. */
float trainer_eval(Trainer *tr, const Corpus *c, size_t windows, int bos);

/* The batch of the next forward: B sequences of T tokens (positions 0 .. T−1), in the
 * buffers made for B0 sequences of N: 2 <= T <= N, B >= 1, B·T <= B0·N and
 * B·T² <= B0·N² (the attention weights). 0 or TRAIN_BAD. Training sets it per step and
 * restores B0 × N. */
int trainer_set_batch(Trainer *tr, int B, int T);

/* The best heads of the trainer's model, measured on its own attention weights with
 * sequences of T tokens (2 <= T <= N: the context the step trains at) and o->bos in
 * front, from a forward pass of B sequences each:
 *   induction   on periodic random bytes (periods in [period_min, min(period_max, T/2)]): the best
 *               mean weight, over heads of layers >= 1, from each token i >= s + p on
 *               i − p + 1 (the byte after its previous occurrence)
 *   prev_token  on validation text: the best over heads of the smaller of the mean
 *               weights on key i − 1 over the first and the second half of positions
 *               (a head that keeps to the byte before at every distance)
 *   sink        on validation text: the best mean weight on position 0
 * NaN when T does not fit. Deterministic; clobbers the trainer's batch buffers. */
void trainer_head_scores(Trainer *tr, const Corpus *c, const TrainOptions *o, int T,
                         float *induction, float *prev_token, float *sink);

/* How train_loop reports and when it stops. */
typedef struct {
    const char *checkpoint;    /* file for checkpoints (a checkpoint or nothing), or NULL */
    int checkpoint_every;      /* steps between checkpoints (0: only when stopped), and one
                                * after the last step (a stop while the output folder is
                                * written keeps the run) */
    volatile sig_atomic_t *stop; /* set (Ctrl-C): checkpoint after this step and return */
    void (*progress)(void *user, const TrainLogRow *row, int steps);
    void *user;
    int *saved;                /* counts the checkpoints written, or NULL */
} TrainLoopCtl;

/* Train from the step after the log's last row to o->steps. Returns TRAIN_OK;
 * TRAIN_STOPPED after *stop (the checkpoint written); TRAIN_NONFINITE when a loss or
 * gradient norm is not finite: *bad_step is that step, the parameters are those of the
 * step before, written to the checkpoint; TRAIN_IO when a checkpoint cannot be
 * written (err); TRAIN_NOMEM. */
int train_loop(Trainer *tr, const Corpus *c, const TrainOptions *o, TrainLog *log,
               const TrainLoopCtl *ctl, int *bad_step, char *err, size_t errsize);

/* ---- checkpoints ------------------------------------------------------------------
 * A binary file: "KVSCKPT" + version byte (3), the shape (L, NH, C, N, V), B, the seed,
 * the steps done, the options that shape the run (steps, rates, clip, init, repeats) and
 * the corpus's size and hash, the parameters, both AdamW moments, the log so far, and a
 * checksum of all of it. Written whole or not at all (an OutFile with OUTFILE_OURS_ONLY,
 * outdir.h): only over a checkpoint (never over a user's file, even with --force); a
 * failed or killed save keeps the one before, and the temporary files of killed saves go
 * at the next save. */
#define TRAIN_CKPT_HEADER "KVSCKPT"
int train_checkpoint_save(const Trainer *tr, const TrainOptions *o, const TrainLog *log,
                          const char *path, char *err, size_t errsize);
/* Load path into tr (built with the run's shape) and log. TRAIN_BAD with a message
 * naming the option and both values when the file is not a checkpoint of this version or
 * is of another shape, batch, seed, corpus, schedule, rate, clip, init or repeats; or
 * when its checksum does not match (a byte changed since it was written); log is then
 * empty (freed). */
int train_checkpoint_load(Trainer *tr, const TrainOptions *o, TrainLog *log, const char *path,
                          char *err, size_t errsize);
/* Whose run the checkpoint at path is, from its header alone, against a run of shape cfg,
 * batches of B and options o (the corpus's size and hash set): 0 when it is this run's,
 * TRAIN_OLD_VERSION when it is this run's in a version that cannot be resumed (msg),
 * TRAIN_OTHER_RUN with msg naming the first option that differs ("--layers 2, this run
 * has 1"); *steps: the steps it holds. TRAIN_BAD (msg) when it cannot be read as a
 * checkpoint (not one, truncated, version 1), TRAIN_NOMEM. */
int train_checkpoint_owner(const char *path, const Config *cfg, int B, const TrainOptions *o,
                           int *steps, char *msg, size_t msgsize);

/* ---- the output folder --------------------------------------------------------------- */

/* Bits per byte on the validation split: the model and the n-gram baselines. */
typedef struct {
    double model;         /* the trained model */
    double ngram[3];      /* order 0 (unigram), 1, 2 */
    double alpha[3];      /* their add-α smoothing */
    size_t targets;       /* validation bytes predicted */
} TrainEval;

/* Greedy continuation of each prompt by steps bytes, with the engine. */
typedef struct {
    const char *prompt;
    char *text;           /* the continuation, steps bytes (malloc'ed; may hold any byte) */
    int len;
} TrainSample;

/* s[i].text for each of n prompts (set s[i].prompt), with the start byte bos (or -1)
 * before each prompt: 0, TRAIN_NOMEM, or TRAIN_BAD when a prompt is empty or the start
 * byte, the prompt and the continuation do not fit the context. */
int train_samples(Trainer *tr, TrainSample *s, int n, int steps, int bos);
void train_samples_free(TrainSample *s, int n);

/* Into the output folder o, begun (outdir.h: the files go to its temporary folder,
 * which the caller commits or aborts): config.json and model.safetensors (hf_export),
 * train_log.csv (step,train_loss,val_loss,lr,grad_norm,induction,prev_token,sink: nats
 * and head scores, deterministic; a value not measured at a step is empty),
 * train_timing.csv (step,seconds,tokens_per_s: measured), eval.csv
 * (model,context_bytes,bits_per_byte,smoothing) and samples.txt. TRAIN_IO or
 * TRAIN_NOMEM with a message naming the folder as the user did. */
/* A model whose config has a start token (cfg.bos >= 0: trained with --bos) says so in
 * config.json: "add_bos_token": true, "bos_token_id" and "eos_token_id" bos (readers put
 * it in front of every prompt). */
int train_write(const Trainer *tr, const TrainLog *log, const TrainEval *ev, const TrainSample *s,
                int ns, const OutDir *o, char *err, size_t errsize);

/* The gradient of one batch for another framework to recompute: into the begun folder o
 * config.json and model.safetensors (the weights the gradient is taken at, hf_export)
 * and grads.safetensors: "inputs" and "targets" (B,T) I32, "loss" (1) F32, and the
 * gradient of every parameter under its Hugging Face name (F32). Needs a forward with
 * targets and a backward first. TRAIN_IO or TRAIN_NOMEM with a message. */
int train_write_grads(const Trainer *tr, float loss, const OutDir *o, char *err, size_t errsize);

#endif
