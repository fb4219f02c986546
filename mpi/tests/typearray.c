/* Array datatypes: MPI_Type_create_subarray (C and Fortran order) and
 * MPI_Type_create_darray (BLOCK, CYCLIC, NONE, default and explicit
 * dargs, both orders): extents, which elements they select (packed and
 * compared with a hand-computed list), a darray scatter of a global array
 * over every rank that reassembles it, their decoding, and bad arguments. */
#include "check.h"
#include <string.h>

/* The elements of `t0` (ints) out of `a`: packs them and returns how many. */
static int picked(MPI_Datatype t0, const int *a, int *out, int max) {
    int size, pos = 0;
    MPI_Datatype t;
    OK(MPI_Type_dup(t0, &t));
    OK(MPI_Type_commit(&t));
    OK(MPI_Type_size(t, &size));
    TRUE(size / 4 <= max);
    OK(MPI_Pack(a, 1, t, out, max * 4, &pos, MPI_COMM_SELF));
    EQ(pos, size);
    OK(MPI_Type_free(&t));
    return size / 4;
}

static void ints_are(const int *got, int n, const int *want, int m) {
    EQ(n, m);
    for (int i = 0; i < n; i++) if (got[i] != want[i]) FAIL("element %d: %d, expected %d", i, got[i], want[i]);
}

static void extent_is(MPI_Datatype t, MPI_Aint lb, MPI_Aint ext) {
    MPI_Aint l, e;
    OK(MPI_Type_get_extent(t, &l, &e));
    EQ(l, lb); EQ(e, ext);
}

int main(int argc, char **argv) {
    check_init(&argc, &argv);
    int rank = check_rank, size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int a[64], got[64];
    for (int i = 0; i < 64; i++) a[i] = i;

    /* Subarray, C order: the 2x2 block at (1, 1) of a 3x4 array. */
    int sizes[2] = {3, 4}, subs[2] = {2, 2}, starts[2] = {1, 1};
    MPI_Datatype sc, sf;
    OK(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &sc));
    extent_is(sc, 0, 48);
    int wc[] = {5, 6, 9, 10};
    ints_are(got, picked(sc, a, got, 64), wc, 4);
    /* Fortran order: dimension 0 fastest, element (i, j) at i + 3 j. */
    OK(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_FORTRAN, MPI_INT, &sf));
    extent_is(sf, 0, 48);
    int wf[] = {4, 5, 7, 8};
    ints_are(got, picked(sf, a, got, 64), wf, 4);
    /* Decoding: ndims, sizes, subsizes, starts, order. */
    int ni, na, nd, comb, ints[32];
    MPI_Aint aints[1];
    MPI_Datatype types[1];
    OK(MPI_Type_get_envelope(sf, &ni, &na, &nd, &comb));
    EQ(comb, MPI_COMBINER_SUBARRAY); EQ(ni, 3 * 2 + 2); EQ(na, 0); EQ(nd, 1);
    OK(MPI_Type_get_contents(sf, 32, 1, 1, ints, aints, types));
    int wsub[] = {2, 3, 4, 2, 2, 1, 1, MPI_ORDER_FORTRAN};
    ints_are(ints, 8, wsub, 8);
    TRUE(types[0] == MPI_INT);
    /* A subarray as a message: rank 0's block lands in the same place. */
    OK(MPI_Type_commit(&sc));
    int recv[12];
    for (int i = 0; i < 12; i++) recv[i] = -1;
    OK(MPI_Sendrecv(a, 1, sc, 0, 1, recv, 1, sc, 0, 1, MPI_COMM_SELF, MPI_STATUS_IGNORE));
    for (int i = 0; i < 12; i++) EQ(recv[i], (i == 5 || i == 6 || i == 9 || i == 10) ? i : -1);
    /* Bad arguments. */
    MPI_Datatype bad;
    int big[2] = {3, 3};
    ERR(MPI_ERR_ARG, MPI_Type_create_subarray(2, sizes, big, starts, MPI_ORDER_C, MPI_INT, &bad));
    ERR(MPI_ERR_ARG, MPI_Type_create_subarray(2, sizes, subs, starts, 99, MPI_INT, &bad));

    /* Darray, 1-d, 10 ints on 3 processes. */
    int g10 = 10, p3 = 3, block = MPI_DISTRIBUTE_BLOCK, cyclic = MPI_DISTRIBUTE_CYCLIC;
    int none = MPI_DISTRIBUTE_NONE, dflt = MPI_DISTRIBUTE_DFLT_DARG, two = 2, one = 1;
    MPI_Datatype d;
    OK(MPI_Type_create_darray(3, 2, 1, &g10, &block, &dflt, &p3, MPI_ORDER_C, MPI_INT, &d));
    extent_is(d, 0, 40);
    int wb[] = {8, 9};
    ints_are(got, picked(d, a, got, 64), wb, 2);
    OK(MPI_Type_free(&d));
    OK(MPI_Type_create_darray(3, 1, 1, &g10, &cyclic, &dflt, &p3, MPI_ORDER_C, MPI_INT, &d));
    int wcy[] = {1, 4, 7};
    ints_are(got, picked(d, a, got, 64), wcy, 3);
    OK(MPI_Type_free(&d));
    OK(MPI_Type_create_darray(3, 0, 1, &g10, &cyclic, &two, &p3, MPI_ORDER_FORTRAN, MPI_INT, &d));
    int wcy2[] = {0, 1, 6, 7};
    ints_are(got, picked(d, a, got, 64), wcy2, 4);
    OK(MPI_Type_get_envelope(d, &ni, &na, &nd, &comb));
    EQ(comb, MPI_COMBINER_DARRAY); EQ(ni, 4 * 1 + 4); EQ(na, 0); EQ(nd, 1);
    OK(MPI_Type_get_contents(d, 32, 1, 1, ints, aints, types));
    int wdar[] = {3, 0, 1, 10, MPI_DISTRIBUTE_CYCLIC, 2, 3, MPI_ORDER_FORTRAN};
    ints_are(ints, 8, wdar, 8);
    TRUE(types[0] == MPI_INT);
    OK(MPI_Type_free(&d));
    /* NONE on a grid dimension of 1: everything. */
    OK(MPI_Type_create_darray(1, 0, 1, &g10, &none, &dflt, &one, MPI_ORDER_C, MPI_INT, &d));
    int wall[10];
    for (int i = 0; i < 10; i++) wall[i] = i;
    ints_are(got, picked(d, a, got, 64), wall, 10);
    OK(MPI_Type_free(&d));
    /* 2-d, a 4x4 array on a 2x2 grid, rank 1 = coordinates (0, 1). */
    int g44[2] = {4, 4}, b2[2] = {block, block}, d2[2] = {dflt, dflt}, p22[2] = {2, 2};
    OK(MPI_Type_create_darray(4, 1, 2, g44, b2, d2, p22, MPI_ORDER_C, MPI_INT, &d));
    extent_is(d, 0, 64);
    int w2c[] = {2, 3, 6, 7};
    ints_are(got, picked(d, a, got, 64), w2c, 4);
    OK(MPI_Type_free(&d));
    OK(MPI_Type_create_darray(4, 1, 2, g44, b2, d2, p22, MPI_ORDER_FORTRAN, MPI_INT, &d));
    int w2f[] = {8, 9, 12, 13};
    ints_are(got, picked(d, a, got, 64), w2f, 4);
    OK(MPI_Type_free(&d));
    /* Errors: a grid that is not `size` processes, NONE on 2, short blocks. */
    ERR(MPI_ERR_ARG, MPI_Type_create_darray(4, 0, 1, &g10, &block, &dflt, &p3, MPI_ORDER_C, MPI_INT, &bad));
    int p2 = 2, four = 4, g9 = 9;
    ERR(MPI_ERR_ARG, MPI_Type_create_darray(2, 0, 1, &g10, &none, &dflt, &p2, MPI_ORDER_C, MPI_INT, &bad));
    ERR(MPI_ERR_ARG, MPI_Type_create_darray(2, 0, 1, &g9, &block, &four, &p2, MPI_ORDER_C, MPI_INT, &bad));

    /* Every rank's darray piece of a 2-d global array, cyclic(2) by rows
     * and block by columns, gathered by rank 0 through the same types:
     * the global array comes back whole. */
    int dims[2] = {0, 0};
    OK(MPI_Dims_create(size, 2, dims));
    EQ(dims[0] * dims[1], size);
    int gs[2] = {7, 5}, dist[2] = {cyclic, block}, darg[2] = {2, dflt};
    MPI_Datatype mine;
    OK(MPI_Type_create_darray(size, rank, 2, gs, dist, darg, dims, MPI_ORDER_C, MPI_INT, &mine));
    OK(MPI_Type_commit(&mine));
    int my_size;
    OK(MPI_Type_size(mine, &my_size));
    int global[35], back[35];
    for (int i = 0; i < 35; i++) { global[i] = 1000 + i; back[i] = -1; }
    int packed[35], pos = 0;
    OK(MPI_Pack(global, 1, mine, packed, sizeof packed, &pos, MPI_COMM_SELF));
    if (rank == 0) {
        int total = 0;
        for (int r = 0; r < size; r++) {
            MPI_Datatype theirs;
            OK(MPI_Type_create_darray(size, r, 2, gs, dist, darg, dims, MPI_ORDER_C, MPI_INT, &theirs));
            OK(MPI_Type_commit(&theirs));
            int n;
            OK(MPI_Type_size(theirs, &n));
            total += n / 4;
            if (r == 0) {
                OK(MPI_Unpack(packed, pos, &(int){0}, back, 1, theirs, MPI_COMM_SELF));
            } else {
                OK(MPI_Recv(back, 1, theirs, r, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            }
            OK(MPI_Type_free(&theirs));
        }
        EQ(total, 35);
        for (int i = 0; i < 35; i++) EQ(back[i], 1000 + i);
    } else {
        OK(MPI_Send(global, 1, mine, 0, 9, MPI_COMM_WORLD));
    }
    OK(MPI_Type_free(&mine));

    OK(MPI_Type_free(&sc));
    OK(MPI_Type_free(&sf));
    check_done("typearray");
    return 0;
}
