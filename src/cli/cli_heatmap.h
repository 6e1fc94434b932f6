/* cli_heatmap.h — `kvscope run --heatmaps`: the options, the folder and the
 * observer's life cycle, so cmd_run.c needs only a few calls.
 * CLI layer: these functions print the error line themselves. */
#ifndef KVSCOPE_CLI_HEATMAP_H
#define KVSCOPE_CLI_HEATMAP_H

#include "attn_observer.h"
#include "model.h"
#include "options.h"
#include "outdir.h"
#include "tokenizer.h"

typedef struct {
    int on;              /* --heatmaps (--plots implies it) */
    const char *plots;   /* --plots DIR; NULL: <out>/heatmaps */
    int cell, grid, gif; /* --cell PX (0 auto), --grid, --no-gif */
    int raw, svg;        /* --raw (pixel heatmaps), --no-svg */
    const char *head_names;  /* --fig-heads "L.H=name,...", or NULL */
    const char *prompt_name; /* --fig-prompt TEXT, or NULL */
    /* while running */
    int checked;         /* heatmap_opts_check passed */
    int begun, own_dir;  /* own_dir: --plots was given, so an OutDir of its own */
    OutDir od;
    char dir[4400];      /* where the images are written */
    char shown[4400];    /* the same folder under the name the user will see */
    Heatmap hm;
} HeatmapOpts;

/* The options of a HeatmapOpts. */
extern const Option HEATMAP_OPTIONS[];

void heatmap_opts_default(HeatmapOpts *o);
/* Before any work: check the --plots folder (flags: OUTDIR_FORCE for --force), apart
 * from --out (out) and from the --model folder (model_dir, may be NULL). 0, or 2 after
 * the error line. Nothing to check without --plots. */
int heatmap_opts_check(HeatmapOpts *o, const OutDir *out, unsigned flags, const char *model_dir);
/* The --plots folder once checked, else NULL. */
const OutDir *heatmap_opts_plots(const HeatmapOpts *o);
/* When on: make the folder (out_tmp/heatmaps, or the --plots folder as a whole),
 * open the observer for T_max = prompt + steps tokens and subscribe it. Heads: the
 * --heads-shown spec, or head 0 when NULL. 0, or 2 after the error line. */
int heatmap_opts_begin(HeatmapOpts *o, const Config *cfg, int T_max, const Selection *layers,
                       const char *heads_shown, const char *out, const char *out_tmp,
                       Hooks *hooks);
/* The token at pos (its bytes label the figures' axes): for every prompt token before
 * the prefill, and for each decode step's token before the step. 0, or -1 (out of
 * memory: the observer has failed, heatmap_opts_finish says so). */
int heatmap_opts_token(HeatmapOpts *o, const Tokenizer *tok, int pos, int id);
/* 1 if the observer has failed (its error line is printed by heatmap_opts_finish). */
int heatmap_opts_failed(const HeatmapOpts *o);
/* Finish the images (the GIFs) and free the observer; prints the error line of a
 * failed write and returns 2 then, else status. Call before committing --out. */
int heatmap_opts_finish(HeatmapOpts *o, int status);
/* After --out was committed: commit the --plots folder when status is 0, else drop
 * it. Returns status, or 2 after an error line if the commit failed. */
int heatmap_opts_commit(HeatmapOpts *o, int status);

#endif
