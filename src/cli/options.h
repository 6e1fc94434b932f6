/* options.h — a command's options as one table, read by one parser and printed by one
 * help writer (the shape of git's parse-options.h), so that the help and the parser
 * cannot disagree and every number is checked the same way.
 *
 * An entry names the option ("--steps"), its value in the help ("N"), what kind of value
 * it takes, the field it sets (an offset into the command's struct of arguments), the
 * range of a number and one sentence of help:
 *
 *     OPT_INT("--steps", "N", RunArgs, steps, 0, 65536, "decode steps after the prefill")
 *
 * The command fills its struct with the defaults before parsing; the help prints each
 * field as it is then ("(0..65536, default 8)"), so the help shows the value the command
 * gets. An option whose default is worked out later gives it in words instead ("all when
 * L <= 2"). A table may include another one whose fields live in a struct inside the
 * command's (the model options in ModelArgs, say), and ends with OPT_END.
 *
 * Numbers are decimal only. A whole number is an optional '-' and digits ("08" is 8,
 * "-0" is 0); a number is that with an optional fraction and exponent ("0.25", "1e-3").
 * Anything else is refused with one line naming the option and the value: a sign '+',
 * spaces, trailing characters, hex, "nan", "inf", a whole number written as "1e3", and
 * a value outside the option's range ("1e99", "99999999999999999999").
 *
 * Errors are printed ("kvscope: <problem>: <value>", exit status 2); this is the
 * command line's layer.
 */
#ifndef KVSCOPE_OPTIONS_H
#define KVSCOPE_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum {
    OPT_KIND_END,      /* the end of a table */
    OPT_KIND_GROUP,    /* a heading in the help ("model and prompt") */
    OPT_KIND_TEXT,     /* a line of help of its own, under the options before it */
    OPT_KIND_INCLUDE,  /* the entries of another table, fields at `field` inside ours */
    OPT_KIND_SET,      /* no value: int field = lo (a flag sets 1) */
    OPT_KIND_BIT,      /* no value: unsigned field |= lo */
    OPT_KIND_INT,      /* int in [lo, hi] */
    OPT_KIND_U64,      /* uint64_t, any */
    OPT_KIND_DOUBLE,   /* double in [lo, hi] (or (lo, hi] with OPTF_ABOVE_LO) */
    OPT_KIND_STRING,   /* const char *: the argument itself */
    OPT_KIND_INTS,     /* "1,2,3": into the int array at field (cap long), count at field2 */
    OPT_KIND_CHOICE,   /* a word `parse` knows; its words are listed in `choices` */
    OPT_KIND_CALLBACK  /* anything else: `callback` takes the value */
} OptKind;

enum {
    OPTF_ABOVE_LO = 1,   /* DOUBLE: the value must be > lo */
    OPTF_NONE = 2,       /* INTS: "none" is the empty list */
    OPTF_HIDDEN = 4,     /* not in the help */
};

typedef struct Option Option;
/* Takes option o's value (NULL for an option without one) for the struct at base.
 * 0, or 2 after the error line. */
typedef int OptCallback(const Option *o, const char *value, void *base);

struct Option {
    OptKind kind;
    const char *name;     /* "--steps"; GROUP and TEXT: the text */
    const char *arg;      /* its value in the help: "N", "DIR"; NULL: takes none */
    size_t field, field2; /* offsets of what it sets; INCLUDE: of the included struct */
    size_t cap;           /* INTS: the array's length */
    double lo, hi;        /* the range; SET, BIT: the value set */
    const char *help;     /* one sentence or more; the writer wraps it */
    const char *dflt;     /* the default in words, when the field's value is not it */
    unsigned flags;       /* OPTF_* */
    size_t note;          /* offset of a const char * that gets the name when given, */
    int has_note;         /*   when has_note (ModelArgs.cfg_option: which one was) */
    const char *choices;  /* CHOICE: "fp32, fp16, bf16", for the error line */
    int (*parse)(const char *s, void *field); /* CHOICE: 0, or -1 for a word it lacks */
    const char *(*show)(const void *field);   /* CHOICE: the word for the field's value */
    OptCallback *callback;
    const Option *sub;    /* INCLUDE: the other table */
};

/* The field m of struct S as an offset, refused at compile time when m is not the size
 * of T (an option cannot write a double into an int). */
#define OPT_FIELD(S, m, T) \
    (offsetof(S, m) + 0 * sizeof(char[1 - 2 * !(sizeof(((S *)0)->m) == sizeof(T))]))

#define OPT_END {.kind = OPT_KIND_END}
#define OPT_GROUP(title) {.kind = OPT_KIND_GROUP, .name = (title)}
#define OPT_TEXT(text) {.kind = OPT_KIND_TEXT, .name = (text)}
#define OPT_INCLUDE(S, m, table) \
    {.kind = OPT_KIND_INCLUDE, .field = offsetof(S, m), .sub = (table)}
/* another table of the same struct */
#define OPT_INCLUDE_HERE(table) {.kind = OPT_KIND_INCLUDE, .field = 0, .sub = (table)}
#define OPT_FLAG(nm, S, m, h) \
    {.kind = OPT_KIND_SET, .name = (nm), .field = OPT_FIELD(S, m, int), .lo = 1, .help = (h)}
#define OPT_SET(nm, S, m, value, h)                                                          \
    {.kind = OPT_KIND_SET, .name = (nm), .field = OPT_FIELD(S, m, int), .lo = (value),      \
     .help = (h)}
#define OPT_BIT(nm, S, m, bit, h)                                                            \
    {.kind = OPT_KIND_BIT, .name = (nm), .field = OPT_FIELD(S, m, unsigned), .lo = (bit),   \
     .help = (h)}
#define OPT_INT(nm, a, S, m, min, max, h)                                                    \
    {.kind = OPT_KIND_INT, .name = (nm), .arg = (a), .field = OPT_FIELD(S, m, int),         \
     .lo = (min), .hi = (max), .help = (h)}
#define OPT_U64(nm, a, S, m, h)                                                              \
    {.kind = OPT_KIND_U64, .name = (nm), .arg = (a), .field = OPT_FIELD(S, m, uint64_t),    \
     .help = (h)}
#define OPT_DOUBLE(nm, a, S, m, min, max, h)                                                 \
    {.kind = OPT_KIND_DOUBLE, .name = (nm), .arg = (a), .field = OPT_FIELD(S, m, double),   \
     .lo = (min), .hi = (max), .help = (h)}
/* An int whose default is worked out later: dflt says how ("half the longest run"). */
#define OPT_INT_AUTO(nm, a, S, m, min, max, words, h)                                        \
    {.kind = OPT_KIND_INT, .name = (nm), .arg = (a), .field = OPT_FIELD(S, m, int),         \
     .lo = (min), .hi = (max), .dflt = (words), .help = (h)}
#define OPT_STRING(nm, a, S, m, h)                                                           \
    {.kind = OPT_KIND_STRING, .name = (nm), .arg = (a), .field = OPT_FIELD(S, m, char *),   \
     .help = (h)}
#define OPT_INTS(nm, a, S, m, n, min, max, h)                                                \
    {.kind = OPT_KIND_INTS, .name = (nm), .arg = (a), .field = offsetof(S, m),              \
     .field2 = OPT_FIELD(S, n, int), .cap = sizeof(((S *)0)->m) / sizeof(int), .lo = (min),  \
     .hi = (max), .help = (h)}
#define OPT_CHOICE(nm, a, S, m, parse_fn, show_fn, words, h)                                 \
    {.kind = OPT_KIND_CHOICE, .name = (nm), .arg = (a), .field = offsetof(S, m),            \
     .parse = (parse_fn), .show = (show_fn), .choices = (words), .help = (h)}
#define OPT_CALLBACK(nm, a, fn, h) \
    {.kind = OPT_KIND_CALLBACK, .name = (nm), .arg = (a), .callback = (fn), .help = (h)}
/* The same entries for every command that has them: one text each. */
#define OPT_FORCE(S, m)                                                                      \
    OPT_FLAG("--force", S, m,                                                                \
             "replace an output another command or no kvscope wrote (never /, your home "   \
             "folder, the current folder or one above, a folder outside your home, the "      \
             "current folder and /tmp, another user's, one git tracks, nor a model but by "   \
             "train or export)")
#define OPT_QUIET(S, m) OPT_FLAG("--quiet", S, m, "print nothing but errors")
/* --scripts DIR: NULL until cli_scripts finds the chart scripts of kvscope's install. */
#define OPT_SCRIPTS(S, m, h)                                                                 \
    {.kind = OPT_KIND_STRING, .name = "--scripts", .arg = "DIR", .field = OPT_FIELD(S, m, char *), \
     .dflt = "the plots/ folder of kvscope's install, found from the binary: BIN/../plots or "  \
             "BIN/../../plots, BIN the binary's folder (never the current folder's)",          \
     .help = (h)}

/* What `kvscope <name> --help` prints: the usage line, what the command does (printed
 * as written), its options, notes after them, then the exit-status rule. */
typedef struct {
    const char *name;        /* "run" */
    const char *usage;       /* after "kvscope run": "[options]" */
    const char *about;       /* lines ending in '\n' */
    const Option *options;
    const char *notes;       /* NULL, or lines ending in '\n' */
} Command;

enum { OPTS_HELP = -1 }; /* opts_parse printed the help: the command ends with status 0 */

/* Parse argv[0..argc-1] (the arguments after the command's name) into args, which holds
 * the defaults. --help or -h prints the help (with the defaults args holds) to stdout.
 * 0; OPTS_HELP; or 2 after the error line (an unknown option, a missing or bad value). */
int opts_parse(const Command *cmd, int argc, char **argv, void *args);
/* The help of cmd on f, the defaults read from args. */
void opts_help(const Command *cmd, const void *args, FILE *f);

/* The number parsers every option uses, for values that arrive another way (a list
 * item, a default). The text must be all of the number. 0, or -1 (not a number of that
 * kind) or -2 (out of range: past lo..hi, or of the type). */
int opts_whole(const char *s, long long lo, long long hi, long long *out);
int opts_u64(const char *s, uint64_t *out);
int opts_number(const char *s, double *out);
/* "1,2,3" → at most cap ids, each in lo..hi, into ids; their count in *n. 0, or 2
 * after the error line naming opt. */
int opts_int_list(const char *opt, const char *s, long long lo, long long hi, int *ids, int cap,
                  int *n);

#endif
