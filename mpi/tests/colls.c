/* Every collective in its three forms (blocking, nonblocking, persistent),
 * with MPI_IN_PLACE, v-variants, Alltoallw, derived datatypes, user ops
 * (commutative or not, on a struct with padding), Reduce_local and
 * Op_commutative. Values are checked on every rank. */
#include "check.h"
#include <stddef.h>
#include <string.h>

static int size, rank;

/* mode 0: blocking; 1: nonblocking + Wait; 2: persistent, started twice. */
#define RUN(mode, blocking, nonblocking, persistent) do { \
    MPI_Request rq_ = MPI_REQUEST_NULL; \
    if ((mode) == 0) { OK(blocking); } \
    else if ((mode) == 1) { OK(nonblocking); OK(MPI_Wait(&rq_, MPI_STATUS_IGNORE)); TRUE(rq_ == MPI_REQUEST_NULL); } \
    else { OK(persistent); for (int k_ = 0; k_ < 2; k_++) { OK(MPI_Start(&rq_)); OK(MPI_Wait(&rq_, MPI_STATUS_IGNORE)); } \
           TRUE(rq_ != MPI_REQUEST_NULL); OK(MPI_Request_free(&rq_)); } \
} while (0)

#define C MPI_COMM_WORLD
#define I MPI_INFO_NULL
#define N 5

typedef struct { double v; int i; char c; } item; /* 13 bytes of data, extent 16 */

/* A non-commutative op: 2x2 integer matrix product, inout = in * inout. */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt) {
    int s = 0;
    MPI_Type_size(*dt, &s);
    if (s != 16) { fprintf(stderr, "matmul: bad datatype size %d\n", s); MPI_Abort(C, 2); }
    int *a = in, *b = inout;
    for (int k = 0; k < *len; k++, a += 4, b += 4) {
        int r[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                    a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
        memcpy(b, r, sizeof r);
    }
}

/* A commutative op on the padded struct: max of v, sum of i, xor of c. */
static void itemop(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    item *a = in, *b = inout;
    for (int k = 0; k < *len; k++) {
        if (a[k].v > b[k].v) b[k].v = a[k].v;
        b[k].i += a[k].i;
        b[k].c ^= a[k].c;
    }
}

int main(int argc, char **argv) {
    check_init(&argc, &argv);
    rank = check_rank;
    MPI_Comm_size(C, &size);
    long tri = (long)size * (size - 1) / 2;
    int *counts = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    int *rcounts = malloc(size * sizeof(int)), *rdispls = malloc(size * sizeof(int));
    int big = size * (size + 1) * N + 16;
    int *rbuf = malloc(big * sizeof(int)), *sbuf = malloc(big * sizeof(int));

    for (int mode = 0; mode < 3; mode++) {
        /* Barrier */
        RUN(mode, MPI_Barrier(C), MPI_Ibarrier(C, &rq_), MPI_Barrier_init(C, I, &rq_));

        for (int root = 0; root < size; root += (size > 2 ? size - 1 : 1)) {
            /* Bcast */
            int b[N];
            for (int i = 0; i < N; i++) b[i] = rank == root ? root * 10 + i : -1;
            RUN(mode, MPI_Bcast(b, N, MPI_INT, root, C), MPI_Ibcast(b, N, MPI_INT, root, C, &rq_), MPI_Bcast_init(b, N, MPI_INT, root, C, I, &rq_));
            for (int i = 0; i < N; i++) EQ(b[i], root * 10 + i);

            /* Gather, plain and in place */
            int g[N];
            for (int i = 0; i < N; i++) g[i] = rank * 100 + i;
            for (int i = 0; i < size * N; i++) rbuf[i] = -1;
            RUN(mode, MPI_Gather(g, N, MPI_INT, rbuf, N, MPI_INT, root, C), MPI_Igather(g, N, MPI_INT, rbuf, N, MPI_INT, root, C, &rq_), MPI_Gather_init(g, N, MPI_INT, rbuf, N, MPI_INT, root, C, I, &rq_));
            if (rank == root) for (int i = 0; i < size * N; i++) EQ(rbuf[i], (i / N) * 100 + i % N);
            if (rank == root) { for (int i = 0; i < size * N; i++) rbuf[i] = i / N == root ? root * 100 + i % N : -1;
                RUN(mode, MPI_Gather(MPI_IN_PLACE, N, MPI_INT, rbuf, N, MPI_INT, root, C), MPI_Igather(MPI_IN_PLACE, N, MPI_INT, rbuf, N, MPI_INT, root, C, &rq_), MPI_Gather_init(MPI_IN_PLACE, N, MPI_INT, rbuf, N, MPI_INT, root, C, I, &rq_));
                for (int i = 0; i < size * N; i++) EQ(rbuf[i], (i / N) * 100 + i % N);
            } else RUN(mode, MPI_Gather(g, N, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, root, C), MPI_Igather(g, N, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, root, C, &rq_), MPI_Gather_init(g, N, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, root, C, I, &rq_));

            /* Gatherv: rank r sends r+1 ints; the root places them backwards. */
            int at = 0;
            for (int r = size - 1; r >= 0; r--) { counts[r] = r + 1; displs[r] = at; at += r + 2; }
            for (int i = 0; i <= rank; i++) g[i % N] = rank * 1000 + i;
            int gv[64];
            for (int i = 0; i <= rank && i < 64; i++) gv[i] = rank * 1000 + i;
            for (int i = 0; i < at; i++) rbuf[i] = -7;
            RUN(mode, MPI_Gatherv(gv, rank + 1, MPI_INT, rbuf, counts, displs, MPI_INT, root, C), MPI_Igatherv(gv, rank + 1, MPI_INT, rbuf, counts, displs, MPI_INT, root, C, &rq_), MPI_Gatherv_init(gv, rank + 1, MPI_INT, rbuf, counts, displs, MPI_INT, root, C, I, &rq_));
            if (rank == root) for (int r = 0; r < size; r++) { for (int i = 0; i <= r; i++) EQ(rbuf[displs[r] + i], r * 1000 + i); EQ(rbuf[displs[r] + r + 1], -7); }

            /* Scatter, plain and in place */
            for (int i = 0; i < size * N; i++) sbuf[i] = i * 3;
            int sc[N];
            memset(sc, 0xff, sizeof sc);
            RUN(mode, MPI_Scatter(sbuf, N, MPI_INT, sc, N, MPI_INT, root, C), MPI_Iscatter(sbuf, N, MPI_INT, sc, N, MPI_INT, root, C, &rq_), MPI_Scatter_init(sbuf, N, MPI_INT, sc, N, MPI_INT, root, C, I, &rq_));
            for (int i = 0; i < N; i++) EQ(sc[i], (rank * N + i) * 3);
            if (rank == root) RUN(mode, MPI_Scatter(sbuf, N, MPI_INT, MPI_IN_PLACE, N, MPI_INT, root, C), MPI_Iscatter(sbuf, N, MPI_INT, MPI_IN_PLACE, N, MPI_INT, root, C, &rq_), MPI_Scatter_init(sbuf, N, MPI_INT, MPI_IN_PLACE, N, MPI_INT, root, C, I, &rq_));
            else RUN(mode, MPI_Scatter(NULL, 0, MPI_DATATYPE_NULL, sc, N, MPI_INT, root, C), MPI_Iscatter(NULL, 0, MPI_DATATYPE_NULL, sc, N, MPI_INT, root, C, &rq_), MPI_Scatter_init(NULL, 0, MPI_DATATYPE_NULL, sc, N, MPI_INT, root, C, I, &rq_));
            if (rank == root) EQ(sbuf[root * N], root * N * 3);

            /* Scatterv: rank r gets r+1 ints from the root's backward layout. */
            for (int i = 0; i < at; i++) sbuf[i] = i;
            int sv[64];
            RUN(mode, MPI_Scatterv(sbuf, counts, displs, MPI_INT, sv, rank + 1, MPI_INT, root, C), MPI_Iscatterv(sbuf, counts, displs, MPI_INT, sv, rank + 1, MPI_INT, root, C, &rq_), MPI_Scatterv_init(sbuf, counts, displs, MPI_INT, sv, rank + 1, MPI_INT, root, C, I, &rq_));
            for (int i = 0; i <= rank; i++) EQ(sv[i], displs[rank] + i);

            /* Reduce, plain and in place */
            long rin[N], rout[N];
            for (int i = 0; i < N; i++) { rin[i] = rank + i; rout[i] = -1; }
            RUN(mode, MPI_Reduce(rin, rout, N, MPI_LONG, MPI_SUM, root, C), MPI_Ireduce(rin, rout, N, MPI_LONG, MPI_SUM, root, C, &rq_), MPI_Reduce_init(rin, rout, N, MPI_LONG, MPI_SUM, root, C, I, &rq_));
            if (rank == root) for (int i = 0; i < N; i++) EQ(rout[i], tri + (long)i * size);
            else EQ(rout[0], -1);
            if (rank == root) {
                /* In place, the persistent form restarts on the result: only one start. */
                for (int i = 0; i < N; i++) rout[i] = rank + i;
                if (mode == 2) { MPI_Request rq; OK(MPI_Reduce_init(MPI_IN_PLACE, rout, N, MPI_LONG, MPI_MAX, root, C, I, &rq)); OK(MPI_Start(&rq)); OK(MPI_Wait(&rq, MPI_STATUS_IGNORE)); OK(MPI_Request_free(&rq)); }
                else RUN(mode, MPI_Reduce(MPI_IN_PLACE, rout, N, MPI_LONG, MPI_MAX, root, C), MPI_Ireduce(MPI_IN_PLACE, rout, N, MPI_LONG, MPI_MAX, root, C, &rq_), MPI_Reduce_init(MPI_IN_PLACE, rout, N, MPI_LONG, MPI_MAX, root, C, I, &rq_));
                for (int i = 0; i < N; i++) EQ(rout[i], size - 1 + i);
            } else {
                if (mode == 2) { MPI_Request rq; OK(MPI_Reduce_init(rin, NULL, N, MPI_LONG, MPI_MAX, root, C, I, &rq)); OK(MPI_Start(&rq)); OK(MPI_Wait(&rq, MPI_STATUS_IGNORE)); OK(MPI_Request_free(&rq)); }
                else RUN(mode, MPI_Reduce(rin, NULL, N, MPI_LONG, MPI_MAX, root, C), MPI_Ireduce(rin, NULL, N, MPI_LONG, MPI_MAX, root, C, &rq_), MPI_Reduce_init(rin, NULL, N, MPI_LONG, MPI_MAX, root, C, I, &rq_));
            }
        }

        /* Allgather, plain and in place */
        int ag[N];
        for (int i = 0; i < N; i++) ag[i] = rank * 10 + i;
        RUN(mode, MPI_Allgather(ag, N, MPI_INT, rbuf, N, MPI_INT, C), MPI_Iallgather(ag, N, MPI_INT, rbuf, N, MPI_INT, C, &rq_), MPI_Allgather_init(ag, N, MPI_INT, rbuf, N, MPI_INT, C, I, &rq_));
        for (int i = 0; i < size * N; i++) EQ(rbuf[i], (i / N) * 10 + i % N);
        for (int i = 0; i < size * N; i++) rbuf[i] = i / N == rank ? rank * 10 + i % N : -1;
        RUN(mode, MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, N, MPI_INT, C), MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, N, MPI_INT, C, &rq_), MPI_Allgather_init(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, N, MPI_INT, C, I, &rq_));
        for (int i = 0; i < size * N; i++) EQ(rbuf[i], (i / N) * 10 + i % N);

        /* Allgatherv (in place too) */
        int at = 0;
        for (int r = 0; r < size; r++) { counts[r] = r % 3; displs[r] = at; at += r % 3 + 1; }
        int agv[3] = {rank, rank + 1, rank + 2};
        for (int i = 0; i < at; i++) rbuf[i] = -5;
        RUN(mode, MPI_Allgatherv(agv, rank % 3, MPI_INT, rbuf, counts, displs, MPI_INT, C), MPI_Iallgatherv(agv, rank % 3, MPI_INT, rbuf, counts, displs, MPI_INT, C, &rq_), MPI_Allgatherv_init(agv, rank % 3, MPI_INT, rbuf, counts, displs, MPI_INT, C, I, &rq_));
        for (int r = 0; r < size; r++) { for (int i = 0; i < r % 3; i++) EQ(rbuf[displs[r] + i], r + i); EQ(rbuf[displs[r] + r % 3], -5); }
        for (int i = 0; i < at; i++) rbuf[i] = -5;
        for (int i = 0; i < rank % 3; i++) rbuf[displs[rank] + i] = rank + i;
        RUN(mode, MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_INT, rbuf, counts, displs, MPI_INT, C), MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_INT, rbuf, counts, displs, MPI_INT, C, &rq_), MPI_Allgatherv_init(MPI_IN_PLACE, 0, MPI_INT, rbuf, counts, displs, MPI_INT, C, I, &rq_));
        for (int r = 0; r < size; r++) for (int i = 0; i < r % 3; i++) EQ(rbuf[displs[r] + i], r + i);

        /* Alltoall (in place too) */
        for (int i = 0; i < size * 2; i++) sbuf[i] = rank * 1000 + i;
        RUN(mode, MPI_Alltoall(sbuf, 2, MPI_INT, rbuf, 2, MPI_INT, C), MPI_Ialltoall(sbuf, 2, MPI_INT, rbuf, 2, MPI_INT, C, &rq_), MPI_Alltoall_init(sbuf, 2, MPI_INT, rbuf, 2, MPI_INT, C, I, &rq_));
        for (int r = 0; r < size; r++) { EQ(rbuf[2 * r], r * 1000 + 2 * rank); EQ(rbuf[2 * r + 1], r * 1000 + 2 * rank + 1); }
        if (mode != 2) { /* in place restarted would exchange back */
            for (int i = 0; i < size * 2; i++) rbuf[i] = rank * 1000 + i;
            RUN(mode, MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, 2, MPI_INT, C), MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, 2, MPI_INT, C, &rq_), MPI_Alltoall_init(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, 2, MPI_INT, C, I, &rq_));
            for (int r = 0; r < size; r++) EQ(rbuf[2 * r + 1], r * 1000 + 2 * rank + 1);
        }

        /* Alltoallv: rank r sends j+1 ints to rank j, at stride-2 places. */
        int sat = 0, rat = 0;
        for (int j = 0; j < size; j++) { counts[j] = j + 1; displs[j] = sat; sat += 2 * (j + 1); rcounts[j] = rank + 1; rdispls[j] = rat; rat += rank + 2; }
        for (int i = 0; i < sat; i++) sbuf[i] = rank * 10000 + i;
        for (int i = 0; i < rat; i++) rbuf[i] = -3;
        RUN(mode, MPI_Alltoallv(sbuf, counts, displs, MPI_INT, rbuf, rcounts, rdispls, MPI_INT, C), MPI_Ialltoallv(sbuf, counts, displs, MPI_INT, rbuf, rcounts, rdispls, MPI_INT, C, &rq_), MPI_Alltoallv_init(sbuf, counts, displs, MPI_INT, rbuf, rcounts, rdispls, MPI_INT, C, I, &rq_));
        {
            int sdisp_me = 0;
            for (int j = 0; j < rank; j++) sdisp_me += 2 * (j + 1);
            for (int r = 0; r < size; r++) { for (int i = 0; i <= rank; i++) EQ(rbuf[rdispls[r] + i], r * 10000 + sdisp_me + i); EQ(rbuf[rdispls[r] + rank + 1], -3); }
        }

        /* Alltoallw: an int to each rank, received as a double-sized block of
         * bytes placed in reverse; types differ per peer on the send side. */
        {
            int *sc = malloc(size * sizeof(int)), *sd = malloc(size * sizeof(int)), *rc = malloc(size * sizeof(int)), *rd = malloc(size * sizeof(int));
            MPI_Datatype *st = malloc(size * sizeof(MPI_Datatype)), *rt = malloc(size * sizeof(MPI_Datatype));
            for (int j = 0; j < size; j++) { sc[j] = j % 2 ? 4 : 1; st[j] = j % 2 ? MPI_BYTE : MPI_INT; sd[j] = 4 * j; sbuf[j] = rank * 100 + j;
                rc[j] = 1; rt[j] = MPI_INT; rd[j] = 4 * (size - 1 - j); rbuf[j] = -1; }
            RUN(mode, MPI_Alltoallw(sbuf, sc, sd, st, rbuf, rc, rd, rt, C), MPI_Ialltoallw(sbuf, sc, sd, st, rbuf, rc, rd, rt, C, &rq_), MPI_Alltoallw_init(sbuf, sc, sd, st, rbuf, rc, rd, rt, C, I, &rq_));
            for (int j = 0; j < size; j++) EQ(rbuf[size - 1 - j], j * 100 + rank);
            free(sc); free(sd); free(rc); free(rd); free(st); free(rt);
        }

        /* Allreduce, plain and in place; Reduce_scatter(_block); Scan; Exscan */
        double d = rank + 0.5, dmax = 0;
        RUN(mode, MPI_Allreduce(&d, &dmax, 1, MPI_DOUBLE, MPI_MAX, C), MPI_Iallreduce(&d, &dmax, 1, MPI_DOUBLE, MPI_MAX, C, &rq_), MPI_Allreduce_init(&d, &dmax, 1, MPI_DOUBLE, MPI_MAX, C, I, &rq_));
        TRUE(dmax == size - 0.5);
        if (mode != 2) {
            int bits = 1 << (rank % 31);
            RUN(mode, MPI_Allreduce(MPI_IN_PLACE, &bits, 1, MPI_INT, MPI_BOR, C), MPI_Iallreduce(MPI_IN_PLACE, &bits, 1, MPI_INT, MPI_BOR, C, &rq_), MPI_Allreduce_init(MPI_IN_PLACE, &bits, 1, MPI_INT, MPI_BOR, C, I, &rq_));
            int want = 0;
            for (int r = 0; r < size; r++) want |= 1 << (r % 31);
            EQ(bits, want);
        }
        for (int i = 0; i < size * 2; i++) sbuf[i] = rank + i;
        int rsb[2] = {-1, -1};
        RUN(mode, MPI_Reduce_scatter_block(sbuf, rsb, 2, MPI_INT, MPI_SUM, C), MPI_Ireduce_scatter_block(sbuf, rsb, 2, MPI_INT, MPI_SUM, C, &rq_), MPI_Reduce_scatter_block_init(sbuf, rsb, 2, MPI_INT, MPI_SUM, C, I, &rq_));
        EQ(rsb[0], tri + (long)size * 2 * rank); EQ(rsb[1], tri + (long)size * (2 * rank + 1));
        if (mode != 2) {
            for (int i = 0; i < size * 2; i++) rbuf[i] = rank + i;
            RUN(mode, MPI_Reduce_scatter_block(MPI_IN_PLACE, rbuf, 2, MPI_INT, MPI_SUM, C), MPI_Ireduce_scatter_block(MPI_IN_PLACE, rbuf, 2, MPI_INT, MPI_SUM, C, &rq_), MPI_Reduce_scatter_block_init(MPI_IN_PLACE, rbuf, 2, MPI_INT, MPI_SUM, C, I, &rq_));
            EQ(rbuf[1], tri + (long)size * (2 * rank + 1));
        }
        int tot = 0;
        for (int r = 0; r < size; r++) { counts[r] = r % 2 + 1; tot += counts[r]; }
        for (int i = 0; i < tot; i++) sbuf[i] = i;
        int rs[2] = {-1, -1}, first = 0;
        for (int r = 0; r < rank; r++) first += counts[r];
        RUN(mode, MPI_Reduce_scatter(sbuf, rs, counts, MPI_INT, MPI_SUM, C), MPI_Ireduce_scatter(sbuf, rs, counts, MPI_INT, MPI_SUM, C, &rq_), MPI_Reduce_scatter_init(sbuf, rs, counts, MPI_INT, MPI_SUM, C, I, &rq_));
        for (int i = 0; i < counts[rank]; i++) EQ(rs[i], (first + i) * size);
        int sv = rank + 1, sres = -1, ex = -9;
        RUN(mode, MPI_Scan(&sv, &sres, 1, MPI_INT, MPI_SUM, C), MPI_Iscan(&sv, &sres, 1, MPI_INT, MPI_SUM, C, &rq_), MPI_Scan_init(&sv, &sres, 1, MPI_INT, MPI_SUM, C, I, &rq_));
        EQ(sres, (rank + 1) * (rank + 2) / 2);
        RUN(mode, MPI_Exscan(&sv, &ex, 1, MPI_INT, MPI_SUM, C), MPI_Iexscan(&sv, &ex, 1, MPI_INT, MPI_SUM, C, &rq_), MPI_Exscan_init(&sv, &ex, 1, MPI_INT, MPI_SUM, C, I, &rq_));
        if (rank > 0) EQ(ex, rank * (rank + 1) / 2); else EQ(ex, -9);
        if (mode != 2) {
            int v = rank + 1;
            RUN(mode, MPI_Scan(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_PROD, C), MPI_Iscan(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_PROD, C, &rq_), MPI_Scan_init(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_PROD, C, I, &rq_));
            int f = 1;
            for (int r = 1; r <= rank + 1; r++) f *= r;
            EQ(v, f);
        }

        /* Derived datatypes: a column of a matrix broadcast and gathered, a
         * vector of doubles reduced with a predefined op. */
        {
            int m[4][3], col[4];
            MPI_Datatype column, dvec;
            OK(MPI_Type_vector(4, 1, 3, MPI_INT, &column)); OK(MPI_Type_commit(&column));
            for (int i = 0; i < 4; i++) for (int j = 0; j < 3; j++) m[i][j] = rank == 0 ? i * 10 + j : -1;
            RUN(mode, MPI_Bcast(&m[0][1], 1, column, 0, C), MPI_Ibcast(&m[0][1], 1, column, 0, C, &rq_), MPI_Bcast_init(&m[0][1], 1, column, 0, C, I, &rq_));
            for (int i = 0; i < 4; i++) { EQ(m[i][1], i * 10 + 1); if (rank) EQ(m[i][0], -1); }
            for (int i = 0; i < 4; i++) col[i] = rank * 4 + i;
            int *gm = malloc(4 * 3 * size * sizeof(int));
            for (int i = 0; i < 12 * size; i++) gm[i] = -1;
            MPI_Datatype colr;   /* the column resized to one int: columns interleave */
            OK(MPI_Type_vector(4, 1, size, MPI_INT, &colr));
            MPI_Datatype colri;
            OK(MPI_Type_create_resized(colr, 0, sizeof(int), &colri)); OK(MPI_Type_commit(&colri));
            RUN(mode, MPI_Allgather(col, 4, MPI_INT, gm, 1, colri, C), MPI_Iallgather(col, 4, MPI_INT, gm, 1, colri, C, &rq_), MPI_Allgather_init(col, 4, MPI_INT, gm, 1, colri, C, I, &rq_));
            for (int i = 0; i < 4; i++) for (int r = 0; r < size; r++) EQ(gm[i * size + r], r * 4 + i);
            free(gm);
            double dv[6], dr[6];
            OK(MPI_Type_vector(3, 1, 2, MPI_DOUBLE, &dvec)); OK(MPI_Type_commit(&dvec));
            for (int i = 0; i < 6; i++) { dv[i] = rank + i; dr[i] = -1; }
            RUN(mode, MPI_Allreduce(dv, dr, 1, dvec, MPI_SUM, C), MPI_Iallreduce(dv, dr, 1, dvec, MPI_SUM, C, &rq_), MPI_Allreduce_init(dv, dr, 1, dvec, MPI_SUM, C, I, &rq_));
            for (int i = 0; i < 6; i += 2) TRUE(dr[i] == tri + (double)i * size);
            for (int i = 1; i < 6; i += 2) TRUE(dr[i] == -1);
            OK(MPI_Type_free(&column)); OK(MPI_Type_free(&colr)); OK(MPI_Type_free(&colri)); OK(MPI_Type_free(&dvec));
        }

        /* User ops: a non-commutative matrix product (rank order matters) and
         * a commutative op on a padded struct. */
        {
            MPI_Op mm, io;
            MPI_Datatype mat, it;
            OK(MPI_Op_create(matmul, 0, &mm));
            OK(MPI_Type_contiguous(4, MPI_INT, &mat)); OK(MPI_Type_commit(&mat));
            int x[4] = {1, rank + 1, 0, 1}, p[4] = {0}; /* [[1, r+1], [0, 1]] */
            RUN(mode, MPI_Allreduce(x, p, 1, mat, mm, C), MPI_Iallreduce(x, p, 1, mat, mm, C, &rq_), MPI_Allreduce_init(x, p, 1, mat, mm, C, I, &rq_));
            EQ(p[0], 1); EQ(p[1], (size * (size + 1)) / 2); EQ(p[2], 0); EQ(p[3], 1);
            int sres4[4] = {0};
            RUN(mode, MPI_Scan(x, sres4, 1, mat, mm, C), MPI_Iscan(x, sres4, 1, mat, mm, C, &rq_), MPI_Scan_init(x, sres4, 1, mat, mm, C, I, &rq_));
            EQ(sres4[1], (rank + 1) * (rank + 2) / 2);
            int bl[3] = {1, 1, 1};
            MPI_Aint ds[3] = {offsetof(item, v), offsetof(item, i), offsetof(item, c)};
            MPI_Datatype ts[3] = {MPI_DOUBLE, MPI_INT, MPI_CHAR};
            OK(MPI_Type_create_struct(3, bl, ds, ts, &it)); OK(MPI_Type_commit(&it));
            OK(MPI_Op_create(itemop, 1, &io));
            item in[2], out[2];
            for (int k = 0; k < 2; k++) { in[k].v = rank * (k ? -1.0 : 1.0); in[k].i = rank + k; in[k].c = (char)(1 << (rank % 7)); }
            memset(out, 0, sizeof out);
            for (int root = 0; root < size; root += size > 1 ? size - 1 : 1) {
                RUN(mode, MPI_Reduce(in, out, 2, it, io, root, C), MPI_Ireduce(in, out, 2, it, io, root, C, &rq_), MPI_Reduce_init(in, out, 2, it, io, root, C, I, &rq_));
                if (rank == root) {
                    char cx = 0;
                    for (int r = 0; r < size; r++) cx ^= (char)(1 << (r % 7));
                    TRUE(out[0].v == size - 1); TRUE(out[1].v == 0);
                    EQ(out[0].i, tri); EQ(out[1].i, tri + size); EQ(out[0].c, cx);
                }
            }
            int commute = -1;
            OK(MPI_Op_commutative(mm, &commute)); EQ(commute, 0);
            OK(MPI_Op_commutative(io, &commute)); EQ(commute, 1);
            OK(MPI_Op_commutative(MPI_SUM, &commute)); EQ(commute, 1);
            OK(MPI_Op_free(&mm)); TRUE(mm == MPI_OP_NULL); OK(MPI_Op_free(&io));
            OK(MPI_Type_free(&mat)); OK(MPI_Type_free(&it));
        }
    }

    /* A persistent collective reads its buffers at each start. */
    {
        int v = 0, s = -1;
        MPI_Request rq;
        OK(MPI_Allreduce_init(&v, &s, 1, MPI_INT, MPI_SUM, C, I, &rq));
        for (int k = 1; k <= 3; k++) {
            v = k * (rank + 1);
            OK(MPI_Start(&rq)); OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
            EQ(s, k * size * (size + 1) / 2);
        }
        OK(MPI_Request_free(&rq));
    }

    /* Reduce_local and op errors. */
    {
        int a[3] = {1, 2, 3}, b[3] = {10, 20, 30};
        OK(MPI_Reduce_local(a, b, 3, MPI_INT, MPI_SUM)); EQ(b[2], 33);
        OK(MPI_Reduce_local(a, b, 3, MPI_INT, MPI_MIN)); EQ(b[0], 1);
        MPI_Op mm;
        OK(MPI_Op_create(matmul, 0, &mm));
        MPI_Datatype mat;
        OK(MPI_Type_contiguous(4, MPI_INT, &mat)); OK(MPI_Type_commit(&mat));
        int x[4] = {1, 2, 0, 1}, y[4] = {1, 3, 0, 1};
        OK(MPI_Reduce_local(x, y, 1, mat, mm)); EQ(y[1], 5);
        OK(MPI_Comm_set_errhandler(C, MPI_ERRORS_RETURN));
        OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
        double f = 1;
        ERR(MPI_ERR_OP, MPI_Allreduce(MPI_IN_PLACE, &f, 1, MPI_DOUBLE, MPI_BAND, C));
        ERR(MPI_ERR_OP, MPI_Reduce_local(&f, &f, 1, MPI_DOUBLE, MPI_LXOR));
        MPI_Op pre = MPI_SUM;
        ERR(MPI_ERR_OP, MPI_Op_free(&pre));
        ERR(MPI_ERR_ROOT, MPI_Bcast(&f, 1, MPI_DOUBLE, size, C));
        OK(MPI_Op_free(&mm)); OK(MPI_Type_free(&mat));
    }

    free(counts); free(displs); free(rcounts); free(rdispls); free(rbuf); free(sbuf);
    check_done("colls");
    return 0;
}
