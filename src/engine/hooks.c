/* hooks.c — subscribe and dispatch. */
#include "hooks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const suffix[HOOK_COUNT] = {
    "hook_resid_pre", "ln1.hook_normalized", "attn.hook_q", "attn.hook_k", "attn.hook_v",
    "attn.cache_k", "attn.cache_v", "attn.hook_attn_scores", "attn.hook_pattern",
    "attn.hook_z", "hook_attn_out", "hook_resid_mid", "ln2.hook_normalized",
    "mlp.hook_pre", "mlp.hook_post", "hook_mlp_out", "hook_resid_post",
    "hook_logits", "hook_step_end",
};

/* every point but the model-level ones lives in a block */
static int per_layer(int p) { return p != HOOK_LOGITS && p != HOOK_STEP_END; }

uint64_t flops_layers(const FlopCount *f) { return f->qkv + f->attn + f->attn_proj + f->mlp; }
uint64_t flops_total(const FlopCount *f) { return flops_layers(f) + f->lm_head + f->elementwise; }

void flops_add(FlopCount *acc, const FlopCount *f) {
    acc->qkv += f->qkv;
    acc->attn += f->attn;
    acc->attn_proj += f->attn_proj;
    acc->mlp += f->mlp;
    acc->lm_head += f->lm_head;
    acc->elementwise += f->elementwise;
    acc->weight_bytes += f->weight_bytes;
}

void hooks_init(Hooks *h) { memset(h, 0, sizeof *h); }

int hooks_subscribe(Hooks *h, uint32_t mask, HookFn fn, void *user) {
    if (h->n >= HOOKS_MAX_SUBSCRIBERS || !fn) return -1;
    h->sub[h->n].fn = fn;
    h->sub[h->n].user = user;
    h->sub[h->n].mask = mask & HOOK_ALL;
    h->n++;
    h->active |= mask & HOOK_ALL;
    return 0;
}

int hooks_emit(const Hooks *h, const HookEvent *ev) {
    if (!h) return 0;
    for (int i = 0; i < h->n; i++) {
        if (!(h->sub[i].mask & HOOK_BIT(ev->point))) continue;
        int rc = h->sub[i].fn(ev, h->sub[i].user);
        if (rc) return rc;
    }
    return 0;
}

const char *hook_name(HookPoint p, int layer, char *buf, size_t size) {
    if ((int)p < 0 || p >= HOOK_COUNT) snprintf(buf, size, "?");
    else if (layer < 0) snprintf(buf, size, "%s", suffix[p]);
    else snprintf(buf, size, "blocks.%d.%s", layer, suffix[p]);
    return buf;
}

int hook_parse(const char *name, HookPoint *p, int *layer) {
    int l = -1;
    const char *rest = name;
    if (strncmp(name, "blocks.", 7) == 0) {
        char *end;
        long v = strtol(name + 7, &end, 10);
        if (end == name + 7 || *end != '.' || v < 0 || v > 1000000) return -1;
        l = (int)v;
        rest = end + 1;
    }
    for (int i = 0; i < HOOK_COUNT; i++) {
        if (strcmp(rest, suffix[i]) == 0 && per_layer(i) == (l >= 0)) {
            *p = (HookPoint)i;
            *layer = l;
            return 0;
        }
    }
    return -1;
}

const char *phase_name(Phase ph) { return ph == PHASE_PREFILL ? "prefill" : "decode"; }
