/* numfmt.c — "%.9g" and "%lld" without printf, and numbers for people; see numfmt.h. */
#include "numfmt.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int numfmt_int(char *buf, long long v) {
    char tmp[NUMFMT_INT_MAX];
    int n = 0, len = 0;
    /* negate in unsigned arithmetic: -LLONG_MIN does not fit a long long */
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) buf[len++] = '-';
    while (n) buf[len++] = tmp[--n];
    buf[len] = '\0';
    return len;
}

/* x·10^j, j in -60..60, with at most three roundings (10^0 .. 10^22 are exact doubles). */
static double scale10(double x, int j) {
    static const double p10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    if (j >= 0) {
        while (j > 22) x *= 1e22, j -= 22;
        return x * p10[j];
    }
    j = -j;
    while (j > 22) x /= 1e22, j -= 22;
    return x / p10[j];
}

/* The 9 digits d (100000000 ≤ d < 10^9) of a value d·10^(X-8), as %g lays them out. */
static int layout_g9(char *buf, uint32_t d, int X) {
    char dig[9];
    for (int i = 8; i >= 0; i--) dig[i] = (char)('0' + d % 10), d /= 10;
    int nd = 9;
    while (nd > 1 && dig[nd - 1] == '0') nd--; /* %g drops trailing zeros */
    int n = 0;
    if (X >= -4 && X < 9) { /* fixed notation */
        if (X < 0) {
            buf[n++] = '0';
            buf[n++] = '.';
            for (int i = 0; i < -X - 1; i++) buf[n++] = '0';
            memcpy(buf + n, dig, (size_t)nd), n += nd;
        } else {
            for (int i = 0; i <= X; i++) buf[n++] = i < nd ? dig[i] : '0';
            if (nd > X + 1) {
                buf[n++] = '.';
                memcpy(buf + n, dig + X + 1, (size_t)(nd - X - 1)), n += nd - X - 1;
            }
        }
    } else { /* d.dddde±XX */
        buf[n++] = dig[0];
        if (nd > 1) {
            buf[n++] = '.';
            memcpy(buf + n, dig + 1, (size_t)(nd - 1)), n += nd - 1;
        }
        buf[n++] = 'e';
        buf[n++] = X < 0 ? '-' : '+';
        const int a = X < 0 ? -X : X;
        if (a >= 10) buf[n++] = (char)('0' + a / 10);
        else buf[n++] = '0';
        buf[n++] = (char)('0' + a % 10);
    }
    buf[n] = '\0';
    return n;
}

int numfmt_float(char *buf, float xf) {
    double x = xf;
    if (!isfinite(x)) return snprintf(buf, NUMFMT_FLOAT_MAX, "%.9g", x);
    int n = 0;
    if (signbit(x)) buf[n++] = '-', x = -x;
    if (x == 0.0) {
        buf[n++] = '0';
        buf[n] = '\0';
        return n;
    }
    int e2;
    (void)frexp(x, &e2); /* x = f·2^e2, 0.5 ≤ f < 1 */
    /* the decimal exponent, give or take one: log10(x) ≈ (e2 - 1)·log10(2) */
    int X = (int)floor((e2 - 1) * 0.30102999566398120);
    double y = scale10(x, 8 - X);
    while (y < 1e8) y = scale10(x, 8 - --X);
    while (y >= 1e9) y = scale10(x, 8 - ++X);
    const double fl = floor(y);
    if (fabs(y - fl - 0.5) < 2e-6) /* too close to a tie to trust the double: ask printf */
        return n + snprintf(buf + n, NUMFMT_FLOAT_MAX - (size_t)n, "%.9g", x);
    double d = y - fl < 0.5 ? fl : fl + 1.0;
    if (d >= 1e9) d = 1e8, X++; /* 999999999.6 rounds up to 1.00000000e(X+1) */
    return n + layout_g9(buf + n, (uint32_t)d, X);
}

const char *group_digits(uint64_t v, char *buf, size_t size) {
    char raw[32];
    int n = snprintf(raw, sizeof raw, "%llu", (unsigned long long)v), k = 0;
    for (int i = 0; i < n && (size_t)k + 2 < size; i++) {
        if (i > 0 && (n - i) % 3 == 0) buf[k++] = ',';
        buf[k++] = raw[i];
    }
    buf[k] = '\0';
    return buf;
}

const char *human_bytes(double bytes, char *buf, size_t size) {
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024.0 && u < 4) {
        bytes /= 1024.0;
        u++;
    }
    if (u == 0) snprintf(buf, size, "%.0f B", bytes);
    else snprintf(buf, size, bytes < 10 ? "%.2f %s" : bytes < 100 ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
    return buf;
}

const char *human_seconds(double s, char *buf, size_t size) {
    if (s < 1.0) snprintf(buf, size, "%.3g ms", 1e3 * s);
    else snprintf(buf, size, "%.3g s", s);
    return buf;
}
