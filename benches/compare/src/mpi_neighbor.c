/* Neighborhood collective latency on a 2-D periodic Cartesian grid
 * (MPI_Dims_create over every rank, both dimensions periodic: four
 * neighbours each), the loop of mpi_coll.c: per size, MPI_Barrier, then
 * warm-up + ITERS calls, each timed alone and followed by an untimed
 * MPI_Barrier. A rank's latency is its timed total / ITERS; the row gives
 * the average, minimum and maximum over the ranks and p50_us, rank 0's
 * median call.
 *
 * Usage: mpi_neighbor alltoall|allgather [sizes] [iters] [warmup]
 *   sizes: bytes per neighbour block ("8,1k,64k"; default 8 to 64 KiB);
 *   iters: default 1000 (+100 warm-up) up to 8 KiB, 100 (+10) above. */
#include "mpi_common.h"

enum op { ALLTOALL, ALLGATHER, NOPS };
static const char *names[NOPS] = {"alltoall", "allgather"};

int main(int argc, char **argv) {
    int rank, np;
    int op = init_pick(&argc, &argv, names, NOPS, "mpi_neighbor alltoall|allgather [sizes] [iters] [warmup]",
                       &rank, &np);
    long sizes[64];
    int nsz = 0;
    if (argc > 2) nsz = parse_sizes(argv[2], sizes, 64);
    else for (long s = 8; s <= 65536; s <<= 3) sizes[nsz++] = s;
    int iters_arg = argc > 3 ? atoi(argv[3]) : 0, warm_arg = argc > 4 ? atoi(argv[4]) : -1;
    report_binding(rank);
    int dims[2] = {0, 0}, periods[2] = {1, 1};
    MPI_Dims_create(np, 2, dims);
    MPI_Comm grid;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
    size_t maxsz = 8;
    for (int i = 0; i < nsz; i++)
        if ((size_t)sizes[i] > maxsz) maxsz = sizes[i];
    char *sbuf = alloc_buf(maxsz * 4, 'a'), *rbuf = alloc_buf(maxsz * 4, 'b');
    int cap = iters_arg > 1000 ? iters_arg : 1000;
    double *ct = malloc(sizeof(double) * cap);
    if (!rank)
        printf("# mpi_neighbor %s on a %dx%d periodic grid: latency in us, avg/min/max over %d ranks; p50 = median call on rank 0\n"
               "# %-10s %12s %12s %12s %12s\n", names[op], dims[0], dims[1], np, "size", "avg_us", "min_us", "max_us", "p50_us");
    for (int k = 0; k < nsz; k++) {
        int sz = (int)sizes[k];
        int iters = iters_arg ? iters_arg : (sz > 8192 ? 100 : 1000);
        int warm = warm_arg >= 0 ? warm_arg : (sz > 8192 ? 10 : 100);
        MPI_Barrier(grid);
        double timer = 0;
        for (int i = 0; i < warm + iters; i++) {
            double t0 = MPI_Wtime();
            if (op == ALLTOALL) MPI_Neighbor_alltoall(sbuf, sz, MPI_CHAR, rbuf, sz, MPI_CHAR, grid);
            else MPI_Neighbor_allgather(sbuf, sz, MPI_CHAR, rbuf, sz, MPI_CHAR, grid);
            double dt = MPI_Wtime() - t0;
            if (i >= warm) { timer += dt; ct[i - warm] = dt; }
            MPI_Barrier(grid);
        }
        double lat = timer * 1e6 / iters, mn, mx, sum;
        MPI_Reduce(&lat, &mn, 1, MPI_DOUBLE, MPI_MIN, 0, grid);
        MPI_Reduce(&lat, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, grid);
        MPI_Reduce(&lat, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, grid);
        if (!rank) {
            printf("  %-10d %12.3f %12.3f %12.3f %12.3f\n", sz, sum / np, mn, mx, pct(ct, iters, 50) * 1e6);
            fflush(stdout);
        }
    }
    free(ct); free(sbuf); free(rbuf);
    MPI_Comm_free(&grid);
    MPI_Finalize();
    return 0;
}
