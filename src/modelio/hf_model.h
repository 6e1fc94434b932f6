/* hf_model.h — a Hugging Face GPT-2 folder ⇄ kvscope's model.
 *
 * A folder holds config.json and model.safetensors (and, for the tokenizer,
 * vocab.json + merges.txt; see bpe.h). As in Hugging Face's GPT2LMHeadModel:
 *   - tensors are named as in model_tensor_specs(), with or without a
 *     "transformer." prefix;
 *   - h.N.attn.bias and h.N.attn.masked_bias are causal-mask buffers, not
 *     weights: ignored;
 *   - lm_head.weight is tied to wte.weight: absent, or equal to it;
 *   - F32, F16 and BF16 tensors are converted to float32.
 * Every expected tensor must be present with its expected shape, every value finite
 * (a NaN or an infinity is refused with the tensor's name and the first bad index),
 * and nothing else may be there. The files are read as regular files only, so a FIFO
 * or a device in their place is refused rather than blocking (infile.h). Messages
 * name the file, the tensor and the problem.
 */
#ifndef KVSCOPE_HF_MODEL_H
#define KVSCOPE_HF_MODEL_H

#include <stddef.h>

#include "model.h"

/* Results: 0; HF_BAD invalid input (message in err); HF_NOMEM; HF_IO (message). */
enum { HF_BAD = -1, HF_NOMEM = -2, HF_IO = -3 };

/* dir/config.json → cfg: n_layer, n_head, n_embd, n_positions, vocab_size,
 * layer_norm_epsilon (default 1e-5), and the start token: bos_token_id when
 * add_bos_token is true (then it must lie in the vocabulary), else none (-1). Rejects settings kvscope does not compute
 * (activation other than gelu_new, n_inner other than 4·n_embd, unscaled or
 * layer-scaled attention). */
int hf_config_load(const char *dir, Config *cfg, char *err, size_t errsize);
/* The same from config.json's text (len bytes); path names it in messages. */
int hf_config_parse(const char *text, size_t len, const char *path, Config *cfg, char *err,
                    size_t errsize);
/* The largest config.json read (GPT-2's is under 1 KiB). */
#define HF_CONFIG_MAX (1u << 20)

/* dir/model.safetensors → m (which owns its blob), for cfg from hf_config_load.
 * The file is memory-mapped, each tensor converted once into the blob laid out
 * by model_tensor_specs(), then unmapped. */
int hf_weights_load(const char *dir, const Config *cfg, Model *m, char *err, size_t errsize);

/* 1 if dir has both vocab.json and merges.txt, 0 if neither, -1 if only one. */
int hf_has_tokenizer(const char *dir);

/* Write m as dir/config.json + dir/model.safetensors: F32, names without prefix,
 * no lm_head (tied), __metadata__ {"format":"pt"}. dir must exist. A model with a start
 * token (cfg.bos ≥ 0) gets "add_bos_token": true and "bos_token_id" and "eos_token_id"
 * bos (a byte model's one boundary token); without one,
 * bos_token_id is V − 1 (GPT-2's habit) and add_bos_token is absent. */
int hf_export(const Model *m, const char *dir, char *err, size_t errsize);
/* The config.json hf_export writes for c, into buf (snprintf's rule: the length of the
 * whole text, written only in part when it is >= size; 1 KB holds any config).
 * hf_config_parse reads it back as the same shape, eps and start token. */
int hf_config_text(const Config *c, char *buf, size_t size);

#endif
