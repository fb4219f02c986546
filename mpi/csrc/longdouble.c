/* Reductions on C's long double (x87 80-bit extended precision on x86-64,
 * IEEE quad on aarch64), which Rust has no type for: MPI_LONG_DOUBLE,
 * MPI_C_LONG_DOUBLE_COMPLEX / MPI_CXX_LONG_DOUBLE_COMPLEX and
 * MPI_LONG_DOUBLE_INT. Called by mpi/src/ffi/longdouble.rs on whole
 * elements: inout[i] = in[i] (op) inout[i]. The buffers may be unaligned
 * (they are bytes to the engine), so every value goes through memcpy. */
#include <stddef.h>
#include <string.h>

enum { LD_SUM = 0, LD_PROD = 1, LD_MIN = 2, LD_MAX = 3, LD_MINLOC = 4, LD_MAXLOC = 5 };

static long double ld_get(const unsigned char *p) { long double x; memcpy(&x, p, sizeof x); return x; }
static void ld_put(unsigned char *p, long double x) { memcpy(p, &x, sizeof x); }

/* Each returns 0, or -1 for an op the type does not take. */
int ferry_mpi_longdouble(int op, const void *in, void *inout, size_t n) {
    const unsigned char *a = in;
    unsigned char *b = inout;
    const size_t s = sizeof(long double);
    for (size_t i = 0; i < n; i++) {
        long double x = ld_get(a + i * s), y = ld_get(b + i * s);
        switch (op) {
        case LD_SUM: y = x + y; break;
        case LD_PROD: y = x * y; break;
        case LD_MIN: if (x < y) y = x; break;
        case LD_MAX: if (x > y) y = x; break;
        default: return -1;
        }
        ld_put(b + i * s, y);
    }
    return 0;
}

int ferry_mpi_longdouble_complex(int op, const void *in, void *inout, size_t n) {
    const unsigned char *a = in;
    unsigned char *b = inout;
    const size_t s = sizeof(long double);
    if (op != LD_SUM && op != LD_PROD) return -1;
    for (size_t i = 0; i < n; i++) {
        long double ar = ld_get(a + 2 * i * s), ai = ld_get(a + (2 * i + 1) * s);
        long double br = ld_get(b + 2 * i * s), bi = ld_get(b + (2 * i + 1) * s);
        long double r = op == LD_SUM ? ar + br : ar * br - ai * bi;
        long double m = op == LD_SUM ? ai + bi : ar * bi + ai * br;
        ld_put(b + 2 * i * s, r);
        ld_put(b + (2 * i + 1) * s, m);
    }
    return 0;
}

/* MPI_LONG_DOUBLE_INT packed, as it crosses the engine: the long double
 * then the int, back to back (MPI_Type_size 20 on x86-64), not the padded
 * struct { long double v; int i; } of 32 bytes. */
int ferry_mpi_longdouble_int(int op, const void *in, void *inout, size_t n) {
    const unsigned char *a = in;
    unsigned char *b = inout;
    const size_t v = sizeof(long double), s = sizeof(long double) + sizeof(int);
    if (op != LD_MINLOC && op != LD_MAXLOC) return -1;
    for (size_t i = 0; i < n; i++) {
        long double x = ld_get(a + i * s), y = ld_get(b + i * s);
        int xi, yi;
        memcpy(&xi, a + i * s + v, sizeof xi);
        memcpy(&yi, b + i * s + v, sizeof yi);
        int better = op == LD_MINLOC ? x < y : x > y;
        if (better || (x == y && xi < yi)) memcpy(b + i * s, a + i * s, s);
    }
    return 0;
}

/* The sizes of one element, for the Rust side's checks. */
size_t ferry_mpi_longdouble_size(void) { return sizeof(long double); }
size_t ferry_mpi_longdouble_int_size(void) { return sizeof(long double) + sizeof(int); }
