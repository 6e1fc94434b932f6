/* select.h — which layers or heads an observer shows: "all", "0", "0,3-5". */
#ifndef KVSCOPE_SELECT_H
#define KVSCOPE_SELECT_H

#define SELECT_MAX 256

typedef struct {
    unsigned char on[SELECT_MAX];
} Selection;

void select_all(Selection *s);
/* Parse spec into s for indices 0..limit-1. 0, or -1 if spec is malformed or
 * names an index ≥ limit. */
int select_parse(Selection *s, const char *spec, int limit);
static inline int select_has(const Selection *s, int i) {
    return i >= 0 && i < SELECT_MAX && s->on[i];
}

#endif
