/* Blocking collectives: Barrier, Bcast, Reduce and Allreduce (with
 * MPI_IN_PLACE) over integer, floating, logical and pair types, long
 * double (C's extended precision) and its complex and pair types. */
#include "check.h"
#include <wchar.h>
#include <complex.h>
#include <stdbool.h>

#define N 257

int main(int argc, char **argv) {
    check_init(&argc, &argv);
    int size, rank = check_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    OK(MPI_Barrier(MPI_COMM_WORLD));

    /* Bcast from every root. */
    for (int root = 0; root < size; root++) {
        double buf[N];
        for (int i = 0; i < N; i++) buf[i] = rank == root ? root * 1000 + i : -1;
        OK(MPI_Bcast(buf, N, MPI_DOUBLE, root, MPI_COMM_WORLD));
        for (int i = 0; i < N; i++) if (buf[i] != root * 1000 + i) FAIL("bcast root %d: buf[%d] = %g", root, i, buf[i]);
    }

    /* Reduce SUM to each root, plain and in place. */
    long long tri = (long long)size * (size - 1) / 2;
    for (int root = 0; root < size; root++) {
        long in[N], out[N];
        for (int i = 0; i < N; i++) { in[i] = rank + i; out[i] = -1; }
        OK(MPI_Reduce(in, out, N, MPI_LONG, MPI_SUM, root, MPI_COMM_WORLD));
        if (rank == root) for (int i = 0; i < N; i++) EQ(out[i], tri + (long long)i * size);
        else EQ(out[0], -1);
        for (int i = 0; i < N; i++) in[i] = rank + i;
        if (rank == root) OK(MPI_Reduce(MPI_IN_PLACE, in, N, MPI_LONG, MPI_SUM, root, MPI_COMM_WORLD));
        else OK(MPI_Reduce(in, NULL, N, MPI_LONG, MPI_SUM, root, MPI_COMM_WORLD));
        if (rank == root) for (int i = 0; i < N; i++) EQ(in[i], tri + (long long)i * size);
    }

    /* Allreduce: MAX / MIN / PROD on doubles, in place too. */
    double d = rank + 0.5, dmax = 0, dmin = 0, dp;
    OK(MPI_Allreduce(&d, &dmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    OK(MPI_Allreduce(&d, &dmin, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD));
    TRUE(dmax == size - 0.5); TRUE(dmin == 0.5);
    dp = 2.0;
    OK(MPI_Allreduce(MPI_IN_PLACE, &dp, 1, MPI_DOUBLE, MPI_PROD, MPI_COMM_WORLD));
    TRUE(dp == (double)(1LL << size));
    int iv[N];
    for (int i = 0; i < N; i++) iv[i] = 1 << (rank % 31);
    OK(MPI_Allreduce(MPI_IN_PLACE, iv, N, MPI_INT, MPI_BOR, MPI_COMM_WORLD));
    int bits = 0;
    for (int r = 0; r < size; r++) bits |= 1 << (r % 31);
    for (int i = 0; i < N; i++) EQ(iv[i], bits);
    unsigned char bx = (unsigned char)(1 << (rank % 8)), bxo = 0;
    OK(MPI_Allreduce(&bx, &bxo, 1, MPI_BYTE, MPI_BXOR, MPI_COMM_WORLD));
    unsigned char bxe = 0;
    for (int r = 0; r < size; r++) bxe ^= (unsigned char)(1 << (r % 8));
    EQ(bxo, bxe);

    /* Logical ops on C bool. */
    bool mine = rank == 0, any = false, all = true;
    OK(MPI_Allreduce(&mine, &any, 1, MPI_C_BOOL, MPI_LOR, MPI_COMM_WORLD));
    OK(MPI_Allreduce(&mine, &all, 1, MPI_C_BOOL, MPI_LAND, MPI_COMM_WORLD));
    TRUE(any == true); TRUE(all == (size == 1));

    /* MINLOC / MAXLOC on MPI_2INT and MPI_DOUBLE_INT. */
    struct { int v, i; } p = {(rank * 37) % 11, rank}, pmin, pmax;
    OK(MPI_Allreduce(&p, &pmin, 1, MPI_2INT, MPI_MINLOC, MPI_COMM_WORLD));
    OK(MPI_Allreduce(&p, &pmax, 1, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD));
    int lo = 1 << 30, lor = -1, hi = -1, hir = -1;
    for (int r = 0; r < size; r++) {
        int v = (r * 37) % 11;
        if (v < lo) { lo = v; lor = r; }
        if (v > hi) { hi = v; hir = r; }
    }
    EQ(pmin.v, lo); EQ(pmin.i, lor); EQ(pmax.v, hi); EQ(pmax.i, hir);
    struct { double v; int i; } q = {-(double)rank, rank}, qmin;
    OK(MPI_Reduce(&q, &qmin, 1, MPI_DOUBLE_INT, MPI_MINLOC, 0, MPI_COMM_WORLD));
    if (rank == 0) { TRUE(qmin.v == -(double)(size - 1)); EQ(qmin.i, size - 1); }

    /* Complex SUM and PROD, Fortran LOGICAL, 16-byte integers; no op on
     * characters. */
    double _Complex z = (rank + 1) + 1.0 * _Complex_I, zs = 0, zp = 0;
    OK(MPI_Allreduce(&z, &zs, 1, MPI_C_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD));
    OK(MPI_Allreduce(&z, &zp, 1, MPI_C_DOUBLE_COMPLEX, MPI_PROD, MPI_COMM_WORLD));
    double _Complex want = 1;
    for (int r = 0; r < size; r++) want *= (r + 1) + 1.0 * _Complex_I;
    TRUE(__real__ zs == size * (size + 1) / 2.0 && __imag__ zs == size);
    TRUE(__real__ zp == __real__ want && __imag__ zp == __imag__ want);
    float _Complex fz = 1.0f + (float)rank * _Complex_I, fzs = 0;
    OK(MPI_Reduce(&fz, &fzs, 1, MPI_C_FLOAT_COMPLEX, MPI_SUM, 0, MPI_COMM_WORLD));
    if (rank == 0) TRUE(__real__ fzs == size && __imag__ fzs == (float)(size * (size - 1) / 2));
    int flog = rank == 0, fall = -1;
    OK(MPI_Allreduce(&flog, &fall, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD));
    EQ(fall, size == 1);
    __int128 big = (__int128)1 << 70, bigs = 0;
    OK(MPI_Allreduce(&big, &bigs, 1, MPI_INTEGER16, MPI_SUM, MPI_COMM_WORLD));
    TRUE(bigs == ((__int128)size << 70));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    /* MPI_CHAR reduces as a signed 8-bit integer (as MPICH and Open MPI
     * do; OSU 7 sums MPI_CHARs); the other text types take no op. */
    char ch = (char)('a' + rank), cho = 0;
    OK(MPI_Allreduce(&ch, &cho, 1, MPI_CHAR, MPI_MAX, MPI_COMM_WORLD));
    EQ(cho, 'a' + size - 1);
    char one = 1, ones = 0;
    OK(MPI_Allreduce(&one, &ones, 1, MPI_CHAR, MPI_SUM, MPI_COMM_WORLD));
    EQ(ones, (char)size);
    wchar_t wc = L'a', wco;
    ERR(MPI_ERR_OP, MPI_Allreduce(&wc, &wco, 1, MPI_WCHAR, MPI_MAX, MPI_COMM_WORLD));
    /* Quad precision has no arithmetic here. */
    unsigned char quad[16] = {0}, quads[16];
    ERR(MPI_ERR_UNSUPPORTED_OPERATION, MPI_Allreduce(quad, quads, 1, MPI_REAL16, MPI_SUM, MPI_COMM_WORLD));
    long double ld = 1, lds;
    ERR(MPI_ERR_OP, MPI_Allreduce(&ld, &lds, 1, MPI_LONG_DOUBLE, MPI_BAND, MPI_COMM_WORLD));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));

    /* Zero counts. */
    OK(MPI_Bcast(NULL, 0, MPI_INT, 0, MPI_COMM_WORLD));
    OK(MPI_Allreduce(NULL, NULL, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD));

    /* long double (x87 extended: 1/3 sums exactly as C computes it), its
     * complex numbers and MAXLOC/MINLOC on MPI_LONG_DOUBLE_INT. */
    {
        long double x[2] = {(long double)rank / 3.0L, (long double)(rank + 1)}, y[2] = {0, 0};
        OK(MPI_Allreduce(x, y, 2, MPI_LONG_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
        long double want = 0;
        for (int r = 0; r < size; r++) want += (long double)r / 3.0L;
        TRUE(y[0] == want);
        EQ((long long)y[1], (long long)size * (size + 1) / 2);
        OK(MPI_Allreduce(x, y, 2, MPI_LONG_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
        TRUE(y[1] == (long double)size);
        OK(MPI_Allreduce(x, y, 1, MPI_LONG_DOUBLE, MPI_PROD, MPI_COMM_WORLD));
        TRUE(y[0] == 0.0L); /* rank 0 gives 0 */
        struct { long double v; int i; } in = {(long double)(rank % 3), rank}, out = {0, -1};
        OK(MPI_Allreduce(&in, &out, 1, MPI_LONG_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD));
        EQ((long long)out.v, size >= 3 ? 2 : size - 1); EQ(out.i, size >= 3 ? 2 : size - 1);
        OK(MPI_Allreduce(&in, &out, 1, MPI_LONG_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD));
        EQ((long long)out.v, 0); EQ(out.i, 0);
        long double _Complex c = CMPLXL((long double)(rank + 1), 1.0L), p = 0;
        OK(MPI_Allreduce(&c, &p, 1, MPI_C_LONG_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD));
        TRUE(__real__ p == (long double)size * (size + 1) / 2 && __imag__ p == (long double)size);
    }
    check_done("coll");
    return 0;
}
