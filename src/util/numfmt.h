/* numfmt.h — numbers as text: for CSV files, fast (the same characters as printf, without
 * printf), and for people (thousands separated, bytes in KiB and MiB).
 *
 * A recording writes millions of floats (attention.csv holds 3 million rows for a
 * 512-token prompt); printf's "%.9g" takes most of that time. These write into a
 * caller's buffer and return the length written (no terminating NUL is counted;
 * one is written).
 *
 * Floats are written as "%.9g" writes them: 9 significant digits, correctly rounded
 * from the exact binary value, trailing zeros dropped, exponent form below 1e-4 and
 * from 1e9 on. 9 digits are enough for every float32 to read back to the same bits
 * (strtof), which is the promise the CSVs make. The digits come from one scaling in
 * double (exact or within 4 roundings, < 5e-7 of the 9-digit integer); when that
 * integer lies within 2e-6 of a rounding tie, snprintf decides (about 4 in a million
 * values). tests/check_record.c compares with snprintf on 4 million floats.
 */
#ifndef KVSCOPE_NUMFMT_H
#define KVSCOPE_NUMFMT_H

#include <stddef.h>
#include <stdint.h>

enum { NUMFMT_FLOAT_MAX = 24, NUMFMT_INT_MAX = 24 }; /* buffer sizes that always suffice */

/* x as printf("%.9g", (double)x) writes it ("nan", "-inf", "-0", "1.5e-05", …). */
int numfmt_float(char *buf, float x);
/* v in decimal, as printf("%lld"). */
int numfmt_int(char *buf, long long v);

/* For people: every number a table or a lesson shows goes through these two.
 * 1234567 → "1,234,567". Returns buf. */
const char *group_digits(uint64_t v, char *buf, size_t size);
/* Binary units with 3 significant digits: "512 B", "24.0 KiB", "1.00 GiB". Returns buf. */
const char *human_bytes(double bytes, char *buf, size_t size);
/* Seconds with 3 significant digits: 0.00291 → "2.91 ms", 2.39 → "2.39 s". Returns buf. */
const char *human_seconds(double s, char *buf, size_t size);

#endif
