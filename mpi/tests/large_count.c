/* large_count.c: MPI 4's large-count (_c) functions with MPI_Count and
 * MPI_Aint arguments: point-to-point in every mode and form, counts and
 * elements, type constructors and queries, pack/unpack, v-collectives
 * blocking, nonblocking and persistent, a large-count user op; counts,
 * strides, displacements and bounds above INT_MAX in every type
 * constructor, with their decoding (large counts); displacements above
 * INT_MAX in Gatherv_c and Alltoallw_c; and on 2 ranks a
 * message of 2^31 + 8 MPI_BYTEs by MPI_Send_c/MPI_Recv_c, then
 * MPI_Bcast_c and MPI_Allreduce_c in place (one 2 GiB buffer per rank,
 * freed after). */
#include "check.h"
#include <limits.h>
#include <stdint.h>
#include <string.h>

#define N 8

static MPI_Count seen_len = -1;

/* A large-count user op: inout[i] += in[i], recording the count it got. */
static void sum_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *dt) {
    if (*dt != MPI_INT) { fprintf(stderr, "sum_c: wrong datatype\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    seen_len = *len;
    for (MPI_Count i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

static void p2p(int rank, int size) {
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    int out[N], in[N];
    MPI_Count count = N;
    MPI_Status st;
    MPI_Request rq[2];
    for (int i = 0; i < N; i++) out[i] = rank * 100 + i;

    /* Blocking: standard, synchronous, buffered, ready (receive posted first). */
    for (int mode = 0; mode < 4; mode++) {
        memset(in, -1, sizeof in);
        OK(MPI_Irecv_c(in, count, MPI_INT, from, mode, MPI_COMM_WORLD, &rq[0]));
        OK(MPI_Barrier(MPI_COMM_WORLD)); /* every receive posted: Rsend is legal */
        switch (mode) {
        case 0: OK(MPI_Send_c(out, count, MPI_INT, to, mode, MPI_COMM_WORLD)); break;
        case 1: OK(MPI_Ssend_c(out, count, MPI_INT, to, mode, MPI_COMM_WORLD)); break;
        case 2: {
            static char bbuf[4096];
            OK(MPI_Buffer_attach_c(bbuf, (MPI_Count)sizeof bbuf));
            OK(MPI_Bsend_c(out, count, MPI_INT, to, mode, MPI_COMM_WORLD));
            void *addr; MPI_Count bsize = 0;
            OK(MPI_Buffer_detach_c(&addr, &bsize));
            EQ(bsize, sizeof bbuf); TRUE(addr == (void *)bbuf);
            /* The communicator's own buffer (MPI 4.1), the same way. */
            OK(MPI_Comm_attach_buffer_c(MPI_COMM_WORLD, bbuf, (MPI_Count)sizeof bbuf));
            OK(MPI_Bsend_c(out, count, MPI_INT, to, 100, MPI_COMM_WORLD));
            bsize = 0;
            OK(MPI_Comm_detach_buffer_c(MPI_COMM_WORLD, &addr, &bsize));
            EQ(bsize, sizeof bbuf); TRUE(addr == (void *)bbuf);
            break;
        }
        case 3: OK(MPI_Rsend_c(out, count, MPI_INT, to, mode, MPI_COMM_WORLD)); break;
        }
        OK(MPI_Wait(&rq[0], &st));
        for (int i = 0; i < N; i++) EQ(in[i], from * 100 + i);
        if (mode == 2) { /* the communicator buffer's message */
            memset(in, -1, sizeof in);
            OK(MPI_Recv_c(in, count, MPI_INT, from, 100, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            for (int i = 0; i < N; i++) EQ(in[i], from * 100 + i);
        }
        MPI_Count got = -1;
        OK(MPI_Get_count_c(&st, MPI_INT, &got)); EQ(got, N);
        OK(MPI_Get_elements_c(&st, MPI_SHORT, &got)); EQ(got, N * sizeof(int) / sizeof(short));
        OK(MPI_Barrier(MPI_COMM_WORLD));
    }

    /* Nonblocking sends in every mode, received with Recv_c. */
    for (int mode = 0; mode < 4; mode++) {
        static char bbuf[4096];
        if (mode == 2) OK(MPI_Buffer_attach_c(bbuf, (MPI_Count)sizeof bbuf));
        /* Cleared before the ready mode's receive is posted: its data may
         * land any time after (on ofi, before the send's call returns). */
        memset(in, -1, sizeof in);
        if (mode == 3) { OK(MPI_Irecv_c(in, count, MPI_INT, from, 10 + mode, MPI_COMM_WORLD, &rq[1])); OK(MPI_Barrier(MPI_COMM_WORLD)); }
        switch (mode) {
        case 0: OK(MPI_Isend_c(out, count, MPI_INT, to, 10 + mode, MPI_COMM_WORLD, &rq[0])); break;
        case 1: OK(MPI_Issend_c(out, count, MPI_INT, to, 10 + mode, MPI_COMM_WORLD, &rq[0])); break;
        case 2: OK(MPI_Ibsend_c(out, count, MPI_INT, to, 10 + mode, MPI_COMM_WORLD, &rq[0])); break;
        case 3: OK(MPI_Irsend_c(out, count, MPI_INT, to, 10 + mode, MPI_COMM_WORLD, &rq[0])); break;
        }
        if (mode == 3) OK(MPI_Wait(&rq[1], &st));
        else OK(MPI_Recv_c(in, count, MPI_INT, from, 10 + mode, MPI_COMM_WORLD, &st));
        OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
        for (int i = 0; i < N; i++) EQ(in[i], from * 100 + i);
        if (mode == 2) { void *a; MPI_Count s; OK(MPI_Buffer_detach_c(&a, &s)); }
        OK(MPI_Barrier(MPI_COMM_WORLD));
    }

    /* Persistent: every send mode's _init_c against Recv_init_c, started twice. */
    for (int mode = 0; mode < 4; mode++) {
        static char bbuf[4096];
        if (mode == 2) OK(MPI_Buffer_attach_c(bbuf, (MPI_Count)sizeof bbuf));
        OK(MPI_Recv_init_c(in, count, MPI_INT, from, 20 + mode, MPI_COMM_WORLD, &rq[1]));
        switch (mode) {
        case 0: OK(MPI_Send_init_c(out, count, MPI_INT, to, 20 + mode, MPI_COMM_WORLD, &rq[0])); break;
        case 1: OK(MPI_Ssend_init_c(out, count, MPI_INT, to, 20 + mode, MPI_COMM_WORLD, &rq[0])); break;
        case 2: OK(MPI_Bsend_init_c(out, count, MPI_INT, to, 20 + mode, MPI_COMM_WORLD, &rq[0])); break;
        case 3: OK(MPI_Rsend_init_c(out, count, MPI_INT, to, 20 + mode, MPI_COMM_WORLD, &rq[0])); break;
        }
        for (int round = 0; round < 2; round++) {
            for (int i = 0; i < N; i++) out[i] = rank * 100 + i + round;
            memset(in, -1, sizeof in);
            OK(MPI_Start(&rq[1]));
            OK(MPI_Barrier(MPI_COMM_WORLD));
            OK(MPI_Start(&rq[0]));
            OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
            for (int i = 0; i < N; i++) EQ(in[i], from * 100 + i + round);
        }
        OK(MPI_Request_free(&rq[0])); OK(MPI_Request_free(&rq[1]));
        if (mode == 2) { void *a; MPI_Count s; OK(MPI_Buffer_detach_c(&a, &s)); }
        for (int i = 0; i < N; i++) out[i] = rank * 100 + i;
    }

    /* Sendrecv(_replace), Isendrecv(_replace). */
    memset(in, -1, sizeof in);
    OK(MPI_Sendrecv_c(out, count, MPI_INT, to, 30, in, count, MPI_INT, from, 30, MPI_COMM_WORLD, &st));
    for (int i = 0; i < N; i++) EQ(in[i], from * 100 + i);
    memcpy(in, out, sizeof in);
    OK(MPI_Sendrecv_replace_c(in, count, MPI_INT, to, 31, from, 31, MPI_COMM_WORLD, &st));
    for (int i = 0; i < N; i++) EQ(in[i], from * 100 + i);
    memset(in, -1, sizeof in);
    OK(MPI_Isendrecv_c(out, count, MPI_INT, to, 32, in, count, MPI_INT, from, 32, MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Wait(&rq[0], &st));
    for (int i = 0; i < N; i++) EQ(in[i], from * 100 + i);
    memcpy(in, out, sizeof in);
    OK(MPI_Isendrecv_replace_c(in, count, MPI_INT, to, 33, from, 33, MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Wait(&rq[0], &st));
    for (int i = 0; i < N; i++) EQ(in[i], from * 100 + i);

    /* Matched probe: Mrecv_c and Imrecv_c. */
    for (int k = 0; k < 2; k++) {
        MPI_Message msg;
        OK(MPI_Isend_c(out, count, MPI_INT, to, 40 + k, MPI_COMM_WORLD, &rq[0]));
        OK(MPI_Mprobe(from, 40 + k, MPI_COMM_WORLD, &msg, &st));
        memset(in, -1, sizeof in);
        if (k == 0) OK(MPI_Mrecv_c(in, count, MPI_INT, &msg, &st));
        else { OK(MPI_Imrecv_c(in, count, MPI_INT, &msg, &rq[1])); OK(MPI_Wait(&rq[1], &st)); }
        OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
        for (int i = 0; i < N; i++) EQ(in[i], from * 100 + i);
        TRUE(msg == MPI_MESSAGE_NULL);
    }
}

static void types(void) {
    MPI_Datatype t, u;
    MPI_Count size = 0, lb = -1, extent = -1;

    OK(MPI_Type_contiguous_c(3, MPI_INT, &t));
    OK(MPI_Type_size_c(t, &size)); EQ(size, 3 * sizeof(int));
    OK(MPI_Type_free(&t));

    /* vector of 2 blocks of 2 ints, stride 3: extent 5 ints. */
    OK(MPI_Type_vector_c(2, 2, 3, MPI_INT, &t));
    OK(MPI_Type_size_c(t, &size)); EQ(size, 4 * sizeof(int));
    OK(MPI_Type_get_extent_c(t, &lb, &extent)); EQ(lb, 0); EQ(extent, 5 * sizeof(int));
    OK(MPI_Type_free(&t));

    OK(MPI_Type_create_hvector_c(2, 1, 16, MPI_INT, &t));
    OK(MPI_Type_get_extent_c(t, &lb, &extent)); EQ(extent, 16 + sizeof(int));
    OK(MPI_Type_free(&t));

    MPI_Count bl[2] = {1, 2}, di[2] = {4, 1}, dh[2] = {4 * sizeof(int), sizeof(int)};
    OK(MPI_Type_indexed_c(2, bl, di, MPI_INT, &t));
    OK(MPI_Type_size_c(t, &size)); EQ(size, 3 * sizeof(int));
    OK(MPI_Type_get_true_extent_c(t, &lb, &extent)); EQ(lb, sizeof(int)); EQ(extent, 4 * sizeof(int));
    OK(MPI_Type_create_hindexed_c(2, bl, dh, MPI_INT, &u));
    OK(MPI_Type_get_true_extent_c(u, &lb, &extent)); EQ(lb, sizeof(int)); EQ(extent, 4 * sizeof(int));
    OK(MPI_Type_free(&t)); OK(MPI_Type_free(&u));

    OK(MPI_Type_create_indexed_block_c(2, 2, di, MPI_INT, &t));
    OK(MPI_Type_size_c(t, &size)); EQ(size, 4 * sizeof(int));
    OK(MPI_Type_create_hindexed_block_c(2, 2, dh, MPI_INT, &u));
    OK(MPI_Type_get_true_extent_c(u, &lb, &extent)); EQ(lb, sizeof(int)); EQ(extent, 5 * sizeof(int));
    OK(MPI_Type_free(&t)); OK(MPI_Type_free(&u));

    struct { char c; double d; } s;
    MPI_Count sbl[2] = {1, 1}, sd[2] = {0, (MPI_Count)((char *)&s.d - (char *)&s)};
    MPI_Datatype st[2] = {MPI_CHAR, MPI_DOUBLE};
    OK(MPI_Type_create_struct_c(2, sbl, sd, st, &t));
    OK(MPI_Type_size_c(t, &size)); EQ(size, 1 + sizeof(double));
    OK(MPI_Type_get_extent_c(t, &lb, &extent)); EQ(extent, sizeof s);
    OK(MPI_Type_create_resized_c(t, 0, 64, &u));
    OK(MPI_Type_get_extent_c(u, &lb, &extent)); EQ(lb, 0); EQ(extent, 64);
    OK(MPI_Type_free(&t)); OK(MPI_Type_free(&u));

    /* A 2x3 subarray of a 4x5 int array at (1,1): which elements it packs. */
    MPI_Count sizes[2] = {4, 5}, subs[2] = {2, 3}, starts[2] = {1, 1};
    OK(MPI_Type_create_subarray_c(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &t));
    OK(MPI_Type_commit(&t));
    OK(MPI_Type_size_c(t, &size)); EQ(size, 6 * sizeof(int));
    int grid[20], packed[6];
    for (int i = 0; i < 20; i++) grid[i] = i;
    MPI_Count pos = 0, psize = 0;
    OK(MPI_Pack_size_c(1, t, MPI_COMM_WORLD, &psize)); TRUE(psize >= 6 * (MPI_Count)sizeof(int));
    OK(MPI_Pack_c(grid, 1, t, packed, (MPI_Count)sizeof packed, &pos, MPI_COMM_WORLD));
    EQ(pos, sizeof packed);
    int want[6] = {6, 7, 8, 11, 12, 13};
    for (int i = 0; i < 6; i++) EQ(packed[i], want[i]);
    int back[20];
    memset(back, 0, sizeof back);
    pos = 0;
    OK(MPI_Unpack_c(packed, (MPI_Count)sizeof packed, &pos, back, 1, t, MPI_COMM_WORLD));
    EQ(pos, sizeof packed);
    for (int i = 0; i < 20; i++) EQ(back[i], (i / 5 >= 1 && i / 5 <= 2 && i % 5 >= 1 && i % 5 <= 3) ? i : 0);
    /* The external32 forms: the same six ints, big-endian. */
    unsigned char ext[24];
    MPI_Count esize = 0;
    OK(MPI_Pack_external_size_c("external32", 1, t, &esize)); EQ(esize, 24);
    pos = 0;
    OK(MPI_Pack_external_c("external32", grid, 1, t, ext, (MPI_Count)sizeof ext, &pos)); EQ(pos, 24);
    for (int i = 0; i < 6; i++) TRUE(ext[4 * i] == 0 && ext[4 * i + 3] == (unsigned char)want[i]);
    memset(back, 0, sizeof back);
    pos = 0;
    OK(MPI_Unpack_external_c("external32", ext, (MPI_Count)sizeof ext, &pos, back, 1, t)); EQ(pos, 24);
    for (int i = 0; i < 20; i++) EQ(back[i], (i / 5 >= 1 && i / 5 <= 2 && i % 5 >= 1 && i % 5 <= 3) ? i : 0);

    /* Decoding: the subarray's envelope and contents. */
    MPI_Count ni, na, nl, nd; int comb;
    /* A _c constructor records its MPI_Count arguments as large counts
     * (MPI 4.1 §5.1.13): ndims and order are integers, the sizes, subsizes
     * and starts large counts. */
    OK(MPI_Type_get_envelope_c(t, &ni, &na, &nl, &nd, &comb));
    EQ(comb, MPI_COMBINER_SUBARRAY); EQ(ni, 2); EQ(na, 0); EQ(nl, 3 * 2); EQ(nd, 1);
    int ints[2]; MPI_Aint addrs[1]; MPI_Count lcs[6]; MPI_Datatype dts[1];
    OK(MPI_Type_get_contents_c(t, 2, 0, 6, 1, ints, addrs, lcs, dts));
    EQ(ints[0], 2); EQ(ints[1], MPI_ORDER_C); TRUE(dts[0] == MPI_INT);
    EQ(lcs[0], 4); EQ(lcs[1], 5); EQ(lcs[2], 2); EQ(lcs[3], 3); EQ(lcs[4], 1); EQ(lcs[5], 1);
    OK(MPI_Type_free(&t));

    /* A darray of one process is the whole array. */
    MPI_Count gs[1] = {10};
    int dist[1] = {MPI_DISTRIBUTE_BLOCK}, darg[1] = {MPI_DISTRIBUTE_DFLT_DARG}, ps[1] = {1};
    OK(MPI_Type_create_darray_c(1, 0, 1, gs, dist, darg, ps, MPI_ORDER_C, MPI_INT, &t));
    OK(MPI_Type_size_c(t, &size)); EQ(size, 10 * sizeof(int));
    OK(MPI_Type_free(&t));
}


/* The type from a _c constructor's decoding: its combiner, its envelope's
 * counts, and its large counts into `lc` (at most 8), the old type freed
 * if derived. */
static void decode(MPI_Datatype t, int comb, MPI_Count ni, MPI_Count na, MPI_Count nl, MPI_Count nd, MPI_Count *lc) {
    MPI_Count ei = -1, ea = -1, el = -1, ed = -1; int c = -1;
    OK(MPI_Type_get_envelope_c(t, &ei, &ea, &el, &ed, &c));
    EQ(c, comb); EQ(ei, ni); EQ(ea, na); EQ(el, nl); EQ(ed, nd);
    int ints[8]; MPI_Aint addrs[1]; MPI_Datatype dts[2] = {MPI_DATATYPE_NULL, MPI_DATATYPE_NULL};
    OK(MPI_Type_get_contents_c(t, 8, 1, 8, 2, ints, addrs, lc, dts));
    for (int i = 0; i < nd; i++) TRUE(dts[i] == MPI_BYTE || dts[i] == MPI_INT || dts[i] == MPI_DOUBLE);
}

/* Counts, strides, displacements and bounds above INT_MAX in every
 * constructor: the layout is built from them (no memory is touched). */
static void big_types(void) {
    const MPI_Count big = 5033164800LL; /* 4.6875 GiB, well above INT_MAX */
    MPI_Datatype t;
    MPI_Count size = 0, lb = -1, extent = -1, lc[8];

    /* Type_contiguous_c(5033164800, MPI_BYTE): one block of that size. */
    OK(MPI_Type_contiguous_c(big, MPI_BYTE, &t));
    OK(MPI_Type_size_c(t, &size)); EQ(size, big);
    OK(MPI_Type_get_extent_c(t, &lb, &extent)); EQ(lb, 0); EQ(extent, big);
    OK(MPI_Type_get_true_extent_c(t, &lb, &extent)); EQ(lb, 0); EQ(extent, big);
    int isize = 0;
    OK(MPI_Type_size(t, &isize)); EQ(isize, MPI_UNDEFINED);
    decode(t, MPI_COMBINER_CONTIGUOUS, 0, 0, 1, 1, lc);
    EQ(lc[0], big);
    /* Its large counts have no place in the int forms' arrays. */
    int ni, na, nd, comb;
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    ERR(MPI_ERR_TYPE, MPI_Type_get_envelope(t, &ni, &na, &nd, &comb));
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
    OK(MPI_Type_commit(&t));
    OK(MPI_Type_free(&t));

    /* 2 blocks of 2^31 + 1 ints, 2^32 ints apart. */
    const MPI_Count bl = (MPI_Count)INT_MAX + 2, stride = (MPI_Count)1 << 32;
    OK(MPI_Type_vector_c(2, bl, stride, MPI_INT, &t));
    OK(MPI_Type_size_c(t, &size)); EQ(size, 2 * bl * 4);
    OK(MPI_Type_get_extent_c(t, &lb, &extent)); EQ(extent, (stride + bl) * 4);
    decode(t, MPI_COMBINER_VECTOR, 0, 0, 3, 1, lc);
    EQ(lc[0], 2); EQ(lc[1], bl); EQ(lc[2], stride);
    OK(MPI_Type_free(&t));

    /* An hvector stride of 2^33 bytes. */
    OK(MPI_Type_create_hvector_c(3, 1, (MPI_Count)1 << 33, MPI_DOUBLE, &t));
    OK(MPI_Type_get_extent_c(t, &lb, &extent)); EQ(extent, ((MPI_Count)2 << 33) + 8);
    decode(t, MPI_COMBINER_HVECTOR, 0, 0, 3, 1, lc);
    EQ(lc[0], 3); EQ(lc[1], 1); EQ(lc[2], (MPI_Count)1 << 33);
    OK(MPI_Type_free(&t));

    /* Indexed: a block of 2^31 ints at 2^31 ints; hindexed in bytes. */
    MPI_Count bls[2] = {1, (MPI_Count)1 << 31}, dis[2] = {0, (MPI_Count)1 << 31};
    OK(MPI_Type_indexed_c(2, bls, dis, MPI_INT, &t));
    OK(MPI_Type_size_c(t, &size)); EQ(size, (1 + ((MPI_Count)1 << 31)) * 4);
    OK(MPI_Type_get_extent_c(t, &lb, &extent)); EQ(extent, ((MPI_Count)1 << 33) * 2);
    decode(t, MPI_COMBINER_INDEXED, 0, 0, 5, 1, lc);
    EQ(lc[0], 2); EQ(lc[1], 1); EQ(lc[2], (MPI_Count)1 << 31); EQ(lc[3], 0); EQ(lc[4], (MPI_Count)1 << 31);
    OK(MPI_Type_free(&t));
    OK(MPI_Type_create_hindexed_c(2, bls, dis, MPI_INT, &t));
    OK(MPI_Type_get_true_extent_c(t, &lb, &extent)); EQ(lb, 0); EQ(extent, ((MPI_Count)1 << 31) * 5);
    decode(t, MPI_COMBINER_HINDEXED, 0, 0, 5, 1, lc);
    EQ(lc[4], (MPI_Count)1 << 31);
    OK(MPI_Type_free(&t));

    /* Indexed blocks of 3 at 2^32 (extents, then bytes). */
    MPI_Count far[2] = {0, (MPI_Count)1 << 32};
    OK(MPI_Type_create_indexed_block_c(2, 3, far, MPI_INT, &t));
    OK(MPI_Type_get_extent_c(t, &lb, &extent)); EQ(extent, ((MPI_Count)1 << 34) + 12);
    decode(t, MPI_COMBINER_INDEXED_BLOCK, 0, 0, 4, 1, lc);
    EQ(lc[0], 2); EQ(lc[1], 3); EQ(lc[3], (MPI_Count)1 << 32);
    OK(MPI_Type_free(&t));
    OK(MPI_Type_create_hindexed_block_c(2, 3, far, MPI_INT, &t));
    OK(MPI_Type_get_extent_c(t, &lb, &extent)); EQ(extent, ((MPI_Count)1 << 32) + 12);
    decode(t, MPI_COMBINER_HINDEXED_BLOCK, 0, 0, 4, 1, lc);
    OK(MPI_Type_free(&t));

    /* A struct member 2^35 bytes on, of 2^31 doubles. */
    MPI_Count sbl[2] = {1, (MPI_Count)1 << 31}, sdi[2] = {0, (MPI_Count)1 << 35};
    MPI_Datatype sty[2] = {MPI_INT, MPI_DOUBLE};
    OK(MPI_Type_create_struct_c(2, sbl, sdi, sty, &t));
    OK(MPI_Type_size_c(t, &size)); EQ(size, 4 + ((MPI_Count)1 << 34));
    OK(MPI_Type_get_true_extent_c(t, &lb, &extent)); EQ(extent, ((MPI_Count)1 << 35) + ((MPI_Count)1 << 34));
    decode(t, MPI_COMBINER_STRUCT, 0, 0, 5, 2, lc);
    EQ(lc[0], 2); EQ(lc[2], (MPI_Count)1 << 31); EQ(lc[4], (MPI_Count)1 << 35);
    OK(MPI_Type_free(&t));

    /* A subarray of a 2^32 x 4 array of bytes; a darray of 2^33 bytes. */
    MPI_Count sz[2] = {(MPI_Count)1 << 32, 4}, sub[2] = {1, 2}, st[2] = {((MPI_Count)1 << 32) - 1, 1};
    OK(MPI_Type_create_subarray_c(2, sz, sub, st, MPI_ORDER_C, MPI_BYTE, &t));
    OK(MPI_Type_size_c(t, &size)); EQ(size, 2);
    OK(MPI_Type_get_extent_c(t, &lb, &extent)); EQ(extent, (MPI_Count)1 << 34);
    OK(MPI_Type_get_true_extent_c(t, &lb, &extent)); EQ(lb, ((MPI_Count)1 << 34) - 3); EQ(extent, 2);
    OK(MPI_Type_free(&t));
    MPI_Count gs[1] = {(MPI_Count)1 << 33};
    int dist[1] = {MPI_DISTRIBUTE_BLOCK}, darg[1] = {MPI_DISTRIBUTE_DFLT_DARG}, ps[1] = {4};
    OK(MPI_Type_create_darray_c(4, 3, 1, gs, dist, darg, ps, MPI_ORDER_C, MPI_BYTE, &t));
    OK(MPI_Type_size_c(t, &size)); EQ(size, (MPI_Count)1 << 31);
    OK(MPI_Type_get_true_extent_c(t, &lb, &extent)); EQ(lb, 3 * ((MPI_Count)1 << 31));
    decode(t, MPI_COMBINER_DARRAY, 3 * 1 + 4, 0, 1, 1, lc);
    EQ(lc[0], (MPI_Count)1 << 33);
    OK(MPI_Type_free(&t));

    /* Bounds above INT_MAX. */
    OK(MPI_Type_create_resized_c(MPI_INT, -((MPI_Count)1 << 33), (MPI_Count)3 << 32, &t));
    OK(MPI_Type_get_extent_c(t, &lb, &extent)); EQ(lb, -((MPI_Count)1 << 33)); EQ(extent, (MPI_Count)3 << 32);
    decode(t, MPI_COMBINER_RESIZED, 0, 0, 2, 1, lc);
    EQ(lc[0], -((MPI_Count)1 << 33)); EQ(lc[1], (MPI_Count)3 << 32);
    OK(MPI_Type_free(&t));
}

/* The big message: 2^31 + 8 bytes. Round `r`'s bytes are `0x40 + r`
 * (one memset) but at marked places, which hold `at(i, r)`: around
 * INT_MAX, the ends, and every 65521st byte. */
static const MPI_Count big_n = ((MPI_Count)1 << 31) + 8;
static const MPI_Count probe[] = {1, 4095, (MPI_Count)INT_MAX - 1, INT_MAX, (MPI_Count)INT_MAX + 1,
                                  (MPI_Count)INT_MAX + 2, ((MPI_Count)1 << 31) + 6, ((MPI_Count)1 << 31) + 7};
#define NPROBE ((int)(sizeof probe / sizeof probe[0]))

static unsigned char at(MPI_Count i, int r) { return (unsigned char)((i * 7 + (i >> 31) + r) | 0x80); }

/* Round `r` into `b`, keeping only the bits of `mask`. */
static void fill(unsigned char *b, int r, unsigned char mask) {
    memset(b, (0x40 + r) & mask, (size_t)big_n);
    for (MPI_Count i = 0; i < big_n; i += 65521) b[i] = at(i, r) & mask;
    for (int k = 0; k < NPROBE; k++) b[probe[k]] = at(probe[k], r) & mask;
}

static void verify(const unsigned char *b, int r) {
    for (int k = 0; k < NPROBE; k++) EQ(b[probe[k]], at(probe[k], r));
    for (MPI_Count i = 0; i < big_n; i += 65521) {
        EQ(b[i], at(i, r));
        if (i + 2 < (MPI_Count)INT_MAX - 1) EQ(b[i + 2], 0x40 + r);
    }
}

/* A message of 2^31 + 8 MPI_BYTEs, its count above INT_MAX: rank 0 to
 * rank 1 by MPI_Send_c/MPI_Recv_c, then from rank 1 to both by
 * MPI_Bcast_c, then reduced by MPI_Allreduce_c (MPI_BOR) in place, each
 * rank holding half of every byte's bits. Run on 2 ranks only (one 2 GiB
 * buffer per rank; about 4.6 GB of memory in all, measured). */
static void big_messages(int rank) {
    unsigned char *buf = malloc((size_t)big_n);
    TRUE(buf != NULL);
    MPI_Status st;
    if (rank == 0) {
        fill(buf, 0, 0xff);
        OK(MPI_Send_c(buf, big_n, MPI_BYTE, 1, 50, MPI_COMM_WORLD));
    } else {
        memset(buf, 0, (size_t)big_n);
        OK(MPI_Recv_c(buf, big_n, MPI_BYTE, 0, 50, MPI_COMM_WORLD, &st));
        verify(buf, 0);
        MPI_Count got = -1;
        OK(MPI_Get_count_c(&st, MPI_BYTE, &got)); EQ(got, big_n);
        OK(MPI_Get_elements_c(&st, MPI_BYTE, &got)); EQ(got, big_n);
        OK(MPI_Get_count_c(&st, MPI_SHORT, &got)); EQ(got, big_n / 2);
        int small = 0;
        OK(MPI_Get_count(&st, MPI_BYTE, &small)); EQ(small, MPI_UNDEFINED);
        EQ(st.MPI_SOURCE, 0);
    }
    if (rank == 1) fill(buf, 1, 0xff);
    else memset(buf, 0, (size_t)big_n);
    OK(MPI_Bcast_c(buf, big_n, MPI_BYTE, 1, MPI_COMM_WORLD));
    verify(buf, 1);
    fill(buf, 2, rank == 0 ? 0x0f : 0xf0);
    OK(MPI_Allreduce_c(MPI_IN_PLACE, buf, big_n, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD));
    verify(buf, 2);
    free(buf);
}

static void colls(int rank, int size) {
    /* Gatherv_c at root 0: rank r sends r+1 ints, placed at displs[r]. */
    MPI_Count rc[64]; MPI_Aint dp[64];
    MPI_Aint at = 0;
    for (int r = 0; r < size; r++) { rc[r] = r + 1; dp[r] = at; at += r + 2; } /* a gap of one */
    int mine[64], all[256];
    for (int i = 0; i <= rank; i++) mine[i] = rank * 10 + i;
    for (int form = 0; form < 3; form++) {
        for (int i = 0; i < 256; i++) all[i] = -1;
        MPI_Request rq;
        /* Non-roots pass NULL arrays: only the root's are read. */
        const MPI_Count *c = rank == 0 ? rc : NULL;
        const MPI_Aint *d = rank == 0 ? dp : NULL;
        if (form == 0) OK(MPI_Gatherv_c(mine, rank + 1, MPI_INT, all, c, d, MPI_INT, 0, MPI_COMM_WORLD));
        else if (form == 1) { OK(MPI_Igatherv_c(mine, rank + 1, MPI_INT, all, c, d, MPI_INT, 0, MPI_COMM_WORLD, &rq)); OK(MPI_Wait(&rq, MPI_STATUS_IGNORE)); }
        else {
            /* The arrays are temporaries the request must not depend on. */
            MPI_Count rc2[64]; MPI_Aint dp2[64];
            memcpy(rc2, rc, sizeof rc2); memcpy(dp2, dp, sizeof dp2);
            OK(MPI_Gatherv_init_c(mine, rank + 1, MPI_INT, all, rank == 0 ? rc2 : NULL, rank == 0 ? dp2 : NULL, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &rq));
            memset(rc2, 0xff, sizeof rc2); memset(dp2, 0xff, sizeof dp2);
            OK(MPI_Start(&rq)); OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
            OK(MPI_Request_free(&rq));
        }
        if (rank == 0)
            for (int r = 0; r < size; r++) {
                for (int i = 0; i <= r; i++) EQ(all[dp[r] + i], r * 10 + i);
                EQ(all[dp[r] + r + 1], -1);
            }
    }

    /* Alltoallv_c, nonblocking: one int from each to each, reversed places. */
    MPI_Count ones[64]; MPI_Aint sd[64], rd[64];
    int so[64], ri[64];
    for (int r = 0; r < size; r++) { ones[r] = 1; sd[r] = r; rd[r] = size - 1 - r; so[r] = rank * 100 + r; ri[r] = -1; }
    MPI_Request rq;
    OK(MPI_Ialltoallv_c(so, ones, sd, MPI_INT, ri, ones, rd, MPI_INT, MPI_COMM_WORLD, &rq));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    for (int r = 0; r < size; r++) EQ(ri[size - 1 - r], r * 100 + rank);

    /* Allreduce_c with a large-count user op, blocking and persistent. */
    MPI_Op op;
    OK(MPI_Op_create_c(sum_c, 1, &op));
    int v[3] = {rank, 1, 2}, w[3];
    seen_len = -1;
    OK(MPI_Allreduce_c(v, w, 3, MPI_INT, op, MPI_COMM_WORLD));
    EQ(w[0], size * (size - 1) / 2); EQ(w[1], size); EQ(w[2], 2 * size);
    /* Some rank ran the op on the 3 elements (none does on one rank). */
    MPI_Count most = -1;
    OK(MPI_Allreduce(&seen_len, &most, 1, MPI_COUNT, MPI_MAX, MPI_COMM_WORLD));
    if (size > 1) EQ(most, 3);
    w[0] = w[1] = w[2] = -1;
    OK(MPI_Allreduce_init_c(v, w, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq));
    OK(MPI_Start(&rq)); OK(MPI_Wait(&rq, MPI_STATUS_IGNORE)); OK(MPI_Request_free(&rq));
    EQ(w[0], size * (size - 1) / 2); EQ(w[1], size); EQ(w[2], 2 * size);

    /* Reduce_local_c with the user op. */
    int in[5] = {1, 2, 3, 4, 5}, io[5] = {10, 10, 10, 10, 10};
    seen_len = -1;
    OK(MPI_Reduce_local_c(in, io, 5, MPI_INT, op));
    EQ(seen_len, 5);
    for (int i = 0; i < 5; i++) EQ(io[i], 10 + in[i]);
    OK(MPI_Op_free(&op));

    /* Bcast_c and Reduce_scatter_c. */
    int b[4] = {0, 0, 0, 0};
    if (rank == 0) for (int i = 0; i < 4; i++) b[i] = 7 + i;
    OK(MPI_Bcast_c(b, 4, MPI_INT, 0, MPI_COMM_WORLD));
    for (int i = 0; i < 4; i++) EQ(b[i], 7 + i);
    int rs_in[64], rs_out = -1;
    for (int r = 0; r < size; r++) rs_in[r] = r;
    OK(MPI_Reduce_scatter_c(rs_in, &rs_out, ones, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    EQ(rs_out, rank * size);

    /* Displacements above INT_MAX: the buffer argument 2^32 elements (or
     * bytes) before the array, each displacement 2^32 more, so the data
     * lands in the array (the library adds them as addresses). */
    const MPI_Aint far = (MPI_Aint)1 << 32;
    int *before = (int *)((uintptr_t)all - (uintptr_t)far * sizeof(int));
    MPI_Aint fdp[64];
    for (int r = 0; r < size; r++) fdp[r] = far + dp[r];
    for (int i = 0; i < 256; i++) all[i] = -1;
    OK(MPI_Gatherv_c(mine, rank + 1, MPI_INT, before, rank == 0 ? rc : NULL, rank == 0 ? fdp : NULL, MPI_INT, 0, MPI_COMM_WORLD));
    if (rank == 0)
        for (int r = 0; r < size; r++) {
            for (int i = 0; i <= r; i++) EQ(all[dp[r] + i], r * 10 + i);
            EQ(all[dp[r] + r + 1], -1);
        }
    /* Alltoallw_c: byte displacements above INT_MAX both ways. */
    MPI_Aint swd[64], rwd[64];
    MPI_Datatype ints[64];
    for (int r = 0; r < size; r++) {
        swd[r] = far + r * (MPI_Aint)sizeof(int);
        rwd[r] = far + (size - 1 - r) * (MPI_Aint)sizeof(int);
        ints[r] = MPI_INT; ri[r] = -1;
    }
    const int *sfar = (const int *)((uintptr_t)so - (uintptr_t)far);
    int *rfar = (int *)((uintptr_t)ri - (uintptr_t)far);
    OK(MPI_Alltoallw_c(sfar, ones, swd, ints, rfar, ones, rwd, ints, MPI_COMM_WORLD));
    for (int r = 0; r < size; r++) EQ(ri[size - 1 - r], r * 100 + rank);
}

/* Errors of _c calls: negative and overflowing counts; an int form's
 * error (a bad rank) raised once with its class; a count that fits no
 * buffer. Then attached buffers above INT_MAX bytes. */
static void errors(int rank, int size) {
    int x = 0;
    MPI_Datatype t;
    MPI_Request rq;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    ERR(MPI_ERR_COUNT, MPI_Send_c(&x, -1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD));
    ERR(MPI_ERR_COUNT, MPI_Irecv_c(&x, -((MPI_Count)1 << 40), MPI_INT, 0, 0, MPI_COMM_WORLD, &rq));
    ERR(MPI_ERR_COUNT, MPI_Type_contiguous_c(-1, MPI_INT, &t));
    ERR(MPI_ERR_COUNT, MPI_Bcast_c(&x, -1, MPI_INT, 0, MPI_COMM_WORLD));
    /* A size that overflows: 2^62 doubles. */
    ERR(MPI_ERR_COUNT, MPI_Type_contiguous_c((MPI_Count)1 << 62, MPI_DOUBLE, &t));
    MPI_Count cs[64]; MPI_Aint ds[64];
    for (int r = 0; r < size; r++) { cs[r] = 1; ds[r] = 0; }
    cs[size - 1] = -1;
    ERR(MPI_ERR_COUNT, MPI_Allgatherv_c(&x, 1, MPI_INT, &x, cs, ds, MPI_INT, MPI_COMM_WORLD));
    MPI_Count pos = 0;
    /* 2^31 ints do not fit a 4-byte buffer: nothing is read or written. */
    ERR(MPI_ERR_TRUNCATE, MPI_Pack_c(&x, (MPI_Count)1 << 31, MPI_INT, &x, 4, &pos, MPI_COMM_WORLD));
    EQ(pos, 0);
    MPI_Count psize = 0;
    OK(MPI_Pack_size_c((MPI_Count)1 << 31, MPI_INT, MPI_COMM_WORLD, &psize)); EQ(psize, (MPI_Count)1 << 33);
    /* The int form's own errors keep their class. */
    ERR(MPI_ERR_RANK, MPI_Send_c(&x, 1, MPI_INT, size, 0, MPI_COMM_WORLD));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
    /* Attached buffers of more than INT_MAX bytes (no buffered send, so
     * their memory is never touched): the _c detach forms give the size
     * back, the int form INT_MAX. */
    static char region[8];
    const MPI_Count bsz = ((MPI_Count)1 << 32) + 512;
    void *addr = NULL; MPI_Count got = 0; int igot = 0;
    OK(MPI_Buffer_attach_c(region, bsz));
    OK(MPI_Buffer_detach_c(&addr, &got)); TRUE(addr == (void *)region); EQ(got, bsz);
    OK(MPI_Comm_attach_buffer_c(MPI_COMM_WORLD, region, bsz));
    OK(MPI_Comm_detach_buffer(MPI_COMM_WORLD, &addr, &igot)); TRUE(addr == (void *)region); EQ(igot, INT_MAX);
    OK(MPI_Comm_attach_buffer_c(MPI_COMM_WORLD, region, bsz));
    OK(MPI_Comm_detach_buffer_c(MPI_COMM_WORLD, &addr, &got)); EQ(got, bsz);
}

int main(int argc, char **argv) {
    check_init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 64) FAIL("at most 64 ranks");
    p2p(rank, size);
    types();
    big_types();
    colls(rank, size);
    if (size == 2) big_messages(rank);
    errors(rank, size);
    check_done("large_count");
    return 0;
}
