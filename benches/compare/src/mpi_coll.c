/* OSU-style blocking collective latency, the loop of osu_barrier, osu_bcast,
 * osu_reduce, osu_allreduce, osu_allgather and osu_alltoall (OMB 7), written
 * for ferry's comparison harness; the same method as `ferry-bench OP`.
 *
 * Per size, on every rank: MPI_Barrier, then warm-up + ITERS calls, each timed
 * alone and followed by an untimed MPI_Barrier (not for barrier itself).  A
 * rank's latency is its timed total / ITERS; the row is the average, minimum
 * and maximum of that over the ranks (OSU's columns) and p50_us, the median
 * single call on rank 0.  reduce and allreduce are MPI_DOUBLE sums (size in
 * bytes, a multiple of 8), root 0; bcast, allgather, alltoall move MPI_CHAR
 * (allgather, alltoall: size per rank).  OSU's counts: 1000 (+100 warm-up)
 * up to 8 KiB, 100 (+10) above.
 *
 * Usage: mpi_coll OP [sizes] [iters] [warmup]
 *   OP: barrier bcast reduce allreduce allgather alltoall
 *   sizes: "8,64k,1m" (default: OSU's range, 1 (8 for reductions) to 1 MiB) */
#include "mpi_common.h"

enum op { BARRIER, BCAST, REDUCE, ALLREDUCE, ALLGATHER, ALLTOALL, NOPS };
static const char *names[NOPS] = {"barrier", "bcast", "reduce", "allreduce", "allgather", "alltoall"};

static void run(int op, void *s, void *r, int sz, int np) {
    switch (op) {
    case BARRIER: MPI_Barrier(MPI_COMM_WORLD); break;
    case BCAST: MPI_Bcast(s, sz, MPI_CHAR, 0, MPI_COMM_WORLD); break;
    case REDUCE: MPI_Reduce(s, r, sz / 8, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD); break;
    case ALLREDUCE: MPI_Allreduce(s, r, sz / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); break;
    case ALLGATHER: MPI_Allgather(s, sz, MPI_CHAR, r, sz, MPI_CHAR, MPI_COMM_WORLD); break;
    case ALLTOALL: MPI_Alltoall(s, sz, MPI_CHAR, r, sz, MPI_CHAR, MPI_COMM_WORLD); break;
    }
    (void)np;
}

int main(int argc, char **argv) {
    int rank, np;
    int op = init_pick(&argc, &argv, names, NOPS,
                       "mpi_coll barrier|bcast|reduce|allreduce|allgather|alltoall [sizes] [iters] [warmup]", &rank, &np);
    int reduction = op == REDUCE || op == ALLREDUCE;
    long sizes[64];
    int nsz = 0;
    if (argc > 2) nsz = parse_sizes(argv[2], sizes, 64);
    else if (op == BARRIER) sizes[nsz++] = 0;
    else for (long s = reduction ? 8 : 1; s <= (1 << 20); s <<= 1) sizes[nsz++] = s;
    int iters_arg = argc > 3 ? atoi(argv[3]) : 0, warm_arg = argc > 4 ? atoi(argv[4]) : -1;
    size_t maxsz = 8;
    for (int i = 0; i < nsz; i++) {
        if (reduction && sizes[i] % 8) {
            if (!rank) fprintf(stderr, "mpi_coll %s: size %ld is not a multiple of 8 (MPI_DOUBLE)\n", names[op], sizes[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        if ((size_t)sizes[i] > maxsz) maxsz = sizes[i];
    }
    report_binding(rank);
    char *sbuf = alloc_buf(maxsz * np, 'a'), *rbuf = alloc_buf(maxsz * np, 'b');
    if (reduction)
        for (size_t i = 0; i < maxsz / 8; i++) ((double *)sbuf)[i] = rank + 1.0;
    int cap = iters_arg > 1000 ? iters_arg : 1000;
    double *ct = malloc(sizeof(double) * cap);
    if (!rank)
        printf("# mpi_coll %s (osu_%s style): latency in us, avg/min/max over %d ranks; p50 = median call on rank 0\n"
               "# %-10s %12s %12s %12s %12s\n", names[op], names[op], np, "size", "avg_us", "min_us", "max_us", "p50_us");
    for (int k = 0; k < nsz; k++) {
        int sz = (int)sizes[k];
        int iters = iters_arg ? iters_arg : (sz > 8192 ? 100 : 1000);
        int warm = warm_arg >= 0 ? warm_arg : (sz > 8192 ? 10 : 100);
        MPI_Barrier(MPI_COMM_WORLD);
        double timer = 0;
        for (int i = 0; i < warm + iters; i++) {
            double t0 = MPI_Wtime();
            run(op, sbuf, rbuf, sz, np);
            double dt = MPI_Wtime() - t0;
            if (i >= warm) { timer += dt; ct[i - warm] = dt; }
            if (op != BARRIER) MPI_Barrier(MPI_COMM_WORLD);
        }
        double lat = timer * 1e6 / iters, mn, mx, sum;
        MPI_Reduce(&lat, &mn, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&lat, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&lat, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (!rank) {
            printf("  %-10d %12.3f %12.3f %12.3f %12.3f\n", sz, sum / np, mn, mx, pct(ct, iters, 50) * 1e6);
            fflush(stdout);
        }
    }
    free(ct); free(sbuf); free(rbuf);
    MPI_Finalize();
    return 0;
}
