/* kvvalues.h — the values a trained model puts in its KV cache, and what int8 grouping
 * does to them.
 *
 * A text (n ≤ N tokens) runs one token per step, teacher-forced, through the fp32 cache.
 * Then, per layer and for K and for V, each channel c (0 .. C−1, head c / hs) is read over
 * the n positions: min, quartiles, median, max and max |x| — outlier channels show as
 * the few whose spread is many times the others'.
 * The same text runs again four times with the simulated int8 read-back of kvcache.h
 * (K per token or per channel × V per token or per channel); at every position the
 * logits are compared with the fp32 run's: max |Δlogit| and the RMS of Δlogit over every
 * logit of every position.
 *
 * Files (into an output folder):
 *   channels.csv  layer,kv,channel,head,min,q1,median,q3,max,absmax  (kv: K or V;
 *                 quartiles by linear interpolation between sorted values)
 *   groups.csv    k_group,v_group,positions,max_abs_dlogit,rms_dlogit
 *   summary.csv   key,value: positions; per layer l and K/V, outlier_k_l<l> (the largest
 *                 channel max |x| over the median channel's) and top_k_l<l> (its channel);
 *                 dlogit_max_k<g>_v<g> and dlogit_rms_k<g>_v<g> (g: token or channel)
 */
#ifndef KVSCOPE_KVVALUES_H
#define KVSCOPE_KVVALUES_H

#include <stddef.h>

#include "model.h"
#include "outdir.h"

/* One channel over the positions of the text. */
typedef struct {
    float min, q1, median, q3, max, absmax;
} ChannelSpread;

/* [K or V][k grouping][v grouping]: index 0 per token, 1 per channel. */
enum { KVV_K = 0, KVV_V = 1, KVV_TOKEN = 0, KVV_CHANNEL = 1 };

typedef struct {
    int L, C, hs, n;          /* layers, channels, head size, positions */
    ChannelSpread *spread;    /* (L, 2, C): spread[(l·2 + kv)·C + c] */
    double *outlier;          /* (L, 2): the largest channel max |x| of layer l's K (kv 0)
                               * or V (kv 1) over the median channel's (0 if that is 0) */
    int *top;                 /* (L, 2): that channel */
    double dlogit_max[2][2];  /* [k grouping][v grouping] */
    double dlogit_rms[2][2];
} KVValues;

/* Measure over tok (1 ≤ n ≤ N tokens). 0, -1 out of memory, -2 a step failed
 * (non-finite logits) or n out of range. */
int kvvalues_measure(Model *m, const int *tok, int n, KVValues *r);
void kvvalues_free(KVValues *r);

/* channels.csv, groups.csv and summary.csv into the begun folder o. 0, or -1 with a
 * message naming the file. */
int kvvalues_write(const KVValues *r, const OutDir *o, char *err, size_t errsize);

#endif
