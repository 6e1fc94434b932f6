/* ref_gpt2.h — the tests' one independent GPT-2: plain loops in double precision.
 *
 * Written from Hugging Face's GPT2Model, not from kvscope's engine: masked scores take a
 * huge negative value and the softmax runs over the whole row (the engine stops its loop
 * at the query instead), GELU is the tanh form, layernorm divides by sqrt(var + eps). It
 * reads the weights as one blob of doubles laid out by model_tensor_specs, so a test can
 * compare the engine's float32 logits with it (check_model.c) or nudge any single weight
 * for finite differences of the loss (check_train.c). */
#ifndef KVSCOPE_REF_GPT2_H
#define KVSCOPE_REF_GPT2_H

#include <stddef.h>

#include "model.h"

/* blob (n floats) as doubles, malloc'ed; NULL if out of memory. */
double *ref_blob(const float *blob, size_t n);

/* logits (T, V) of the tokens tok[0..T) (T ≤ cfg->N), every position, under the weights
 * w (model_num_params(cfg) doubles in model_tensor_specs order). 0, or -1 if out of
 * memory. */
int ref_gpt2_logits(const Config *cfg, const double *w, const int *tok, int T, double *logits);

#endif
