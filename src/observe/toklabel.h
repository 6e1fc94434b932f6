/* toklabel.h — token texts as axis labels: the bytes of the token at each position,
 * and the labels a figure writes along a row or column of positions.
 *
 * A label covers one or more consecutive positions: the tokens whose bytes together
 * make one UTF-8 character. With a byte-level vocabulary "人" is three tokens (E4 BA
 * BA), so its label "人" spans three cells; a BPE token is usually a label of its
 * own, and two BPE tokens that split a character share one. Characters that would
 * not show are made visible: a space is "␣", a newline "¶", a tab "→", other control
 * bytes and bytes that are not UTF-8 "<0xE4>". Positions that are not consecutive
 * (a sliding window dropped the ones between) never share a label.
 */
#ifndef KVSCOPE_TOKLABEL_H
#define KVSCOPE_TOKLABEL_H

#include <stddef.h>

#define TOKLABEL_MAX_BYTES 32 /* longer tokens keep their first 32 bytes */
#define TOKLABEL_MAX_SPAN 8   /* positions one label may cover */
#define TOKLABEL_TEXT 64

typedef struct {
    unsigned char (*bytes)[TOKLABEL_MAX_BYTES]; /* bytes[pos] */
    unsigned char *len;                         /* len[pos]; 0 = unknown */
    int n;                                      /* positions 0 .. n-1 have room */
} TokenTexts;

typedef struct {
    int first, span;            /* rows/columns first .. first+span-1 of the axis */
    char text[TOKLABEL_TEXT];   /* UTF-8, visible */
} TokLabel;

void token_texts_init(TokenTexts *t);
/* Remember the bytes of the token at pos. 0, or -1 when out of memory. */
int token_texts_set(TokenTexts *t, int pos, const unsigned char *b, size_t n);
void token_texts_free(TokenTexts *t);

/* The labels of an axis whose i-th cell shows position pos[i] (pos NULL: position i),
 * n cells. out has room for n labels; returns how many were written. A position
 * whose bytes are unknown is labelled by its number. */
int toklabel_axis(const TokenTexts *t, const int *pos, int n, TokLabel *out);

/* The visible text of a byte string (for titles): the rules above. Returns buf. */
const char *toklabel_visible(const unsigned char *b, size_t n, char *buf, size_t size);

/* Running text for a terminal: the rules above, except that spaces, newlines and tabs
 * stay as they are (a text, not one label). malloc'ed, NUL-terminated; NULL when out
 * of memory. */
char *toklabel_text(const unsigned char *b, size_t n);

#endif
