/* select.c — index lists. */
#include "select.h"

#include <stdlib.h>
#include <string.h>

void select_all(Selection *s) { memset(s->on, 1, sizeof s->on); }

static int number(const char **p, int limit, int *out) {
    char *end;
    if (**p < '0' || **p > '9') return -1;
    long v = strtol(*p, &end, 10);
    if (v < 0 || v >= limit) return -1;
    *p = end;
    *out = (int)v;
    return 0;
}

int select_parse(Selection *s, const char *spec, int limit) {
    memset(s->on, 0, sizeof s->on);
    if (limit > SELECT_MAX) limit = SELECT_MAX;
    if (strcmp(spec, "all") == 0) {
        memset(s->on, 1, (size_t)limit);
        return 0;
    }
    const char *p = spec;
    for (;;) {
        int a, b;
        if (number(&p, limit, &a)) return -1;
        b = a;
        if (*p == '-') {
            p++;
            if (number(&p, limit, &b) || b < a) return -1;
        }
        for (int i = a; i <= b; i++) s->on[i] = 1;
        if (*p == '\0') return 0;
        if (*p++ != ',') return -1;
    }
}
