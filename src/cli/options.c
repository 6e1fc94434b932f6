/* options.c — the option parser and the help writer; see options.h. */
#include "options.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* ---- numbers ----------------------------------------------------------------------- */

/* 1 if s is an optional '-' then digits, and nothing else. */
static int whole_syntax(const char *s) {
    if (*s == '-') s++;
    if (*s < '0' || *s > '9') return 0;
    while (*s >= '0' && *s <= '9') s++;
    return *s == '\0';
}

int opts_whole(const char *s, long long lo, long long hi, long long *out) {
    if (!whole_syntax(s)) return -1;
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE || v < lo || v > hi) return -2;
    *out = v;
    return 0;
}

int opts_u64(const char *s, uint64_t *out) {
    if (*s == '-' || !whole_syntax(s)) return -1;
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (errno == ERANGE) return -2;
    *out = (uint64_t)v;
    return 0;
}

/* digits [. digits] [e [sign] digits], at least one digit before the exponent */
static int number_syntax(const char *s) {
    int digits = 0;
    if (*s == '-') s++;
    for (; *s >= '0' && *s <= '9'; s++) digits++;
    if (*s == '.')
        for (s++; *s >= '0' && *s <= '9'; s++) digits++;
    if (!digits) return 0;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-') s++;
        if (*s < '0' || *s > '9') return 0;
        while (*s >= '0' && *s <= '9') s++;
    }
    return *s == '\0';
}

int opts_number(const char *s, double *out) {
    if (!number_syntax(s)) return -1;
    double v = strtod(s, NULL); /* an underflow is 0 or a tiny number: fine */
    if (!isfinite(v)) return -2;
    *out = v == 0.0 ? 0.0 : v; /* "-0" is 0 */
    return 0;
}

static int bad_value(const char *opt, const char *problem, const char *value) {
    char what[160];
    snprintf(what, sizeof what, "%s %s", opt, problem);
    return cli_fail(what, value);
}

static int range_error(const char *opt, double lo, double hi, const char *value) {
    char r[96];
    snprintf(r, sizeof r, "must be in %.0f..%.0f", lo, hi);
    return bad_value(opt, r, value);
}

int opts_int_list(const char *opt, const char *s, long long lo, long long hi, int *ids, int cap,
                  int *n) {
    int k = 0;
    for (const char *p = s;; p++) {
        char item[32];
        size_t len = strcspn(p, ",");
        long long v;
        int rc = len == 0 || len >= sizeof item ? -1 : 0;
        if (rc == 0) {
            memcpy(item, p, len);
            item[len] = '\0';
            rc = opts_whole(item, lo, hi, &v);
        }
        if (rc == -2) return range_error(opt, (double)lo, (double)hi, item);
        if (rc) return bad_value(opt, "expects whole numbers separated by commas", s);
        if (k == cap) {
            char what[96];
            snprintf(what, sizeof what, "%s takes at most %d numbers", opt, cap);
            return cli_fail(what, s);
        }
        ids[k++] = (int)v;
        p += len;
        if (*p == '\0') break;
    }
    *n = k;
    return 0;
}

/* ---- one option's value -------------------------------------------------------------- */

static int set_int(const Option *o, const char *v, int *f) {
    long long x;
    int rc = opts_whole(v, (long long)o->lo, (long long)o->hi, &x);
    if (rc == -1) return bad_value(o->name, "expects a whole number", v);
    if (rc) return range_error(o->name, o->lo, o->hi, v);
    *f = (int)x;
    return 0;
}

static int set_double(const Option *o, const char *v, double *f) {
    double x;
    char r[96];
    const int rc = opts_number(v, &x);
    if (rc == -1) return bad_value(o->name, "expects a number", v);
    if (rc) x = v[0] == '-' ? -INFINITY : INFINITY; /* "1e999": past any range */
    if ((o->flags & OPTF_ABOVE_LO) && !(x > o->lo)) {
        snprintf(r, sizeof r, "must be > %g", o->lo);
        return bad_value(o->name, r, v);
    }
    if (x < o->lo || x > o->hi) {
        if (o->flags & OPTF_ABOVE_LO) snprintf(r, sizeof r, "must be > %g and at most %g", o->lo, o->hi);
        else snprintf(r, sizeof r, "must be in %g..%g", o->lo, o->hi);
        return bad_value(o->name, r, v);
    }
    *f = x;
    return 0;
}

/* A list replaces the one before only when all of it is good. */
static int set_ints(const Option *o, const char *v, char *base) {
    int *n = (int *)(base + o->field2), k;
    if ((o->flags & OPTF_NONE) && strcmp(v, "none") == 0) return *n = 0, 0;
    int *ids = malloc(o->cap * sizeof *ids);
    if (!ids) return cli_fail("out of memory parsing", o->name);
    int rc = opts_int_list(o->name, v, (long long)o->lo, (long long)o->hi, ids, (int)o->cap, &k);
    if (rc == 0) {
        memcpy(base + o->field, ids, (size_t)k * sizeof *ids);
        *n = k;
    }
    free(ids);
    return rc;
}

/* Give option o (of the table whose struct is at base) the value v. 0, or 2. */
static int set_value(const Option *o, const char *v, char *base) {
    void *f = base + o->field;
    uint64_t u;
    switch (o->kind) {
    case OPT_KIND_SET: *(int *)f = (int)o->lo; return 0;
    case OPT_KIND_BIT: *(unsigned *)f |= (unsigned)o->lo; return 0;
    case OPT_KIND_INT: return set_int(o, v, f);
    case OPT_KIND_DOUBLE: return set_double(o, v, f);
    case OPT_KIND_STRING: *(const char **)f = v; return 0;
    case OPT_KIND_INTS: return set_ints(o, v, base);
    case OPT_KIND_U64:
        switch (opts_u64(v, &u)) {
        case 0: *(uint64_t *)f = u; return 0;
        case -1: return bad_value(o->name, "expects a whole number >= 0", v);
        default: return bad_value(o->name, "must be in 0..18446744073709551615", v);
        }
    case OPT_KIND_CHOICE:
        if (o->parse(v, f) == 0) return 0;
        char what[200];
        snprintf(what, sizeof what, "unknown %s (%s)", o->name, o->choices);
        return cli_fail(what, v);
    case OPT_KIND_CALLBACK: return o->callback(o, v, base);
    default: return cli_fail("not an option kind", o->name);
    }
}

/* ---- the tables ---------------------------------------------------------------------- */

/* The entry called name in table t or the tables it includes; *base moves to the struct
 * that entry's fields live in. NULL if there is none. */
static const Option *find(const Option *t, const char *name, char **base) {
    for (; t->kind != OPT_KIND_END; t++) {
        if (t->kind == OPT_KIND_INCLUDE) {
            char *b = *base + t->field;
            const Option *o = find(t->sub, name, &b);
            if (o) {
                *base = b;
                return o;
            }
        } else if (t->kind > OPT_KIND_INCLUDE && strcmp(t->name, name) == 0) {
            return t;
        }
    }
    return NULL;
}

int opts_parse(const Command *cmd, int argc, char **argv, void *args) {
    int rc = 0;
    for (int i = 0; i < argc && rc == 0; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            opts_help(cmd, args, stdout);
            return OPTS_HELP;
        }
        char *base = args;
        const Option *o = find(cmd->options, argv[i], &base);
        if (!o) return cli_fail("unknown option", argv[i]);
        const char *v = NULL;
        if (o->arg) {
            if (i + 1 >= argc) return cli_fail("missing value for option", argv[i]);
            v = argv[++i];
        }
        rc = set_value(o, v, base);
        if (rc == 0 && o->has_note) *(const char **)(base + o->note) = o->name;
    }
    return rc;
}

/* ---- the help ------------------------------------------------------------------------ */

enum { HELP_WIDTH = 80, HELP_COLUMN = 23 };

/* The length of the longest start of word p (n long) that ends with a comma and takes
 * at most room columns; 0 if there is none. */
static size_t comma_break(const char *p, size_t n, int room) {
    size_t k = 0;
    for (size_t i = 0; i < n && (int)i < room; i++)
        if (p[i] == ',') k = i + 1;
    return k;
}

/* text wrapped at HELP_WIDTH, the first line from column `at` (where the caller left the
 * cursor), the others from column `indent`. A word longer than a line (a list of
 * numbers) is broken after a comma. */
static void wrap(FILE *f, const char *text, int at, int indent) {
    int col = at, inside = 0; /* inside: p continues a word broken at the line's end */
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, " ");
        const int sep = col > indent && !inside, full = HELP_WIDTH - indent;
        int room = HELP_WIDTH - col - sep;
        size_t k = (int)n > full ? comma_break(p, n, room) : 0;
        if ((int)n > room && !k && col > indent) { /* the next line */
            fprintf(f, "\n%*s", indent, "");
            col = indent;
            room = full;
            k = (int)n > full ? comma_break(p, n, room) : 0;
        } else if (sep) {
            fputc(' ', f);
            col++;
        }
        if (k && (int)n > room) n = k;
        fprintf(f, "%.*s", (int)n, p);
        col += (int)n;
        p += n;
        inside = *p != ' ' && *p != '\0';
        if (inside) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        }
        while (*p == ' ') p++;
    }
    fputc('\n', f);
}

/* The default: the field's value before parsing, as it would be typed. "" for none. */
static void default_text(const Option *o, const char *base, char *buf, size_t size) {
    const void *f = base + o->field;
    buf[0] = '\0';
    if (o->dflt) {
        snprintf(buf, size, "%s", o->dflt);
        return;
    }
    switch (o->kind) {
    case OPT_KIND_INT: snprintf(buf, size, "%d", *(const int *)f); break;
    case OPT_KIND_U64: snprintf(buf, size, "%llu", (unsigned long long)*(const uint64_t *)f); break;
    case OPT_KIND_DOUBLE: snprintf(buf, size, "%g", *(const double *)f); break;
    case OPT_KIND_STRING: {
        const char *v = *(const char *const *)f;
        if (v) snprintf(buf, size, strchr(v, ' ') ? "\"%s\"" : "%s", v);
        break;
    }
    case OPT_KIND_CHOICE:
        if (o->show) snprintf(buf, size, "%s", o->show(f));
        break;
    case OPT_KIND_INTS: {
        const int n = *(const int *)(base + o->field2);
        size_t k = 0;
        if (n == 0 && (o->flags & OPTF_NONE)) snprintf(buf, size, "none");
        for (int i = 0; i < n && k + 16 < size; i++)
            k += (size_t)snprintf(buf + k, size - k, "%s%d", i ? "," : "", ((const int *)f)[i]);
        break;
    }
    default: break;
    }
}

/* " (0..65536, default 8)": what the table and the defaults say about the value. */
static void value_facts(const Option *o, const char *base, char *buf, size_t size) {
    char range[64] = "", def[256];
    if (o->kind == OPT_KIND_INT) snprintf(range, sizeof range, "%.0f..%.0f", o->lo, o->hi);
    if (o->kind == OPT_KIND_INTS)
        snprintf(range, sizeof range, "each %.0f..%.0f%s", o->lo, o->hi,
                 o->flags & OPTF_NONE ? ", or none" : "");
    if (o->kind == OPT_KIND_DOUBLE)
        snprintf(range, sizeof range, o->flags & OPTF_ABOVE_LO ? "> %g, at most %g" : "%g..%g",
                 o->lo, o->hi);
    default_text(o, base, def, sizeof def);
    if (!def[0] && !range[0]) buf[0] = '\0';
    else if (!def[0]) snprintf(buf, size, " (%s)", range);
    else snprintf(buf, size, " (%s%sdefault%s %s)", range, range[0] ? ", " : "", o->dflt ? ":" : "",
                  def);
}

static void help_entry(FILE *f, const Option *o, const char *base) {
    char lhs[64], facts[400], text[1400];
    snprintf(lhs, sizeof lhs, "  %s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
    value_facts(o, base, facts, sizeof facts);
    snprintf(text, sizeof text, "%s%s", o->help ? o->help : "", facts);
    int n = (int)strlen(lhs);
    if (n < HELP_COLUMN - 1) fprintf(f, "%-*s", HELP_COLUMN, lhs);
    else fprintf(f, "%s\n%*s", lhs, HELP_COLUMN, "");
    wrap(f, text, HELP_COLUMN, HELP_COLUMN);
}

static void help_table(FILE *f, const Option *t, const char *base) {
    for (; t->kind != OPT_KIND_END; t++) {
        if (t->flags & OPTF_HIDDEN) continue;
        if (t->kind == OPT_KIND_INCLUDE) help_table(f, t->sub, base + t->field);
        else if (t->kind == OPT_KIND_GROUP) fprintf(f, "\n%s:\n", t->name);
        else if (t->kind == OPT_KIND_TEXT) fprintf(f, "  "), wrap(f, t->name, 2, 2);
        else help_entry(f, t, base);
    }
}

void opts_help(const Command *cmd, const void *args, FILE *f) {
    fprintf(f, "usage: kvscope %s %s\n%s", cmd->name, cmd->usage, cmd->about);
    help_table(f, cmd->options, args);
    if (cmd->notes) fprintf(f, "\n%s", cmd->notes);
    fprintf(f, "\n%s", EXIT_STATUS_HELP);
}
