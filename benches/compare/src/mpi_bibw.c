/* OSU-style bidirectional windowed bandwidth (osu_bibw semantics), 2 ranks.
 * Per iteration each rank posts WINDOW MPI_Irecv, then WINDOW MPI_Isend (one
 * send buffer), and waits for all 2*WINDOW: both directions are in flight at
 * once, as in ferry-bench bibw. OSU iteration counts: 100 (+10 warm-up) up
 * to 8 KiB, 20 (+2) above.
 *   MB/s     = 2*size*WINDOW*iters / elapsed / 1e6   (the osu_bibw figure)
 *   p50_MB/s = 2*size*WINDOW / median(per-iteration time) / 1e6
 *   msgs/s   = 2*WINDOW*iters / elapsed
 * Usage: mpi_bibw [sizes] [window] [iters]   (default sizes 1..4M, window 64) */
#include "mpi_common.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    need_two(rank);
    long sizes[64];
    size_t maxsz;
    int nsz = sizes_arg(argc, argv, sizes, 0, 4, &maxsz);
    int window = argc > 2 ? atoi(argv[2]) : 64, iters_arg = argc > 3 ? atoi(argv[3]) : 0;
    report_binding(rank);
    /* One send buffer (as OSU); a receive buffer per window slot, so that
     * the receives of one window never write the same bytes. */
    char *sbuf = alloc_buf(maxsz, 'a');
    char **rbuf = malloc(sizeof(char *) * window);
    for (int w = 0; w < window; w++) rbuf[w] = alloc_buf(maxsz, 'b');
    MPI_Request *req = malloc(sizeof(MPI_Request) * 2 * window);
    double *wt = malloc(sizeof(double) * (iters_arg > 100 ? iters_arg : 100));
    int peer = 1 - rank;
    if (!rank) printf("# mpi_bibw (osu_bibw style): window %d each way, MB/s = 1e6 B/s, both directions\n# %-10s %12s %12s %14s\n", window, "size", "MB/s", "p50_MB/s", "msgs/s");
    for (int s = 0; s < nsz; s++) {
        int sz = (int)sizes[s];
        int iters = iters_arg ? iters_arg : (sz > 8192 ? 20 : 100), warm = iters / 10;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = 0;
        for (int i = 0; i < warm + iters; i++) {
            if (i == warm) t0 = MPI_Wtime();
            double a = MPI_Wtime();
            for (int w = 0; w < window; w++)
                MPI_Irecv(rbuf[w], sz, MPI_CHAR, peer, 100, MPI_COMM_WORLD, &req[w]);
            for (int w = 0; w < window; w++)
                MPI_Isend(sbuf, sz, MPI_CHAR, peer, 100, MPI_COMM_WORLD, &req[window + w]);
            MPI_Waitall(2 * window, req, MPI_STATUSES_IGNORE);
            if (i >= warm) wt[i - warm] = MPI_Wtime() - a;
        }
        double el = MPI_Wtime() - t0;
        if (rank == 0) {
            double med = pct(wt, iters, 50);
            printf("  %-10d %12.1f %12.1f %14.1f\n", sz, 2.0 * sz * window * iters / el / 1e6,
                   2.0 * sz * window / med / 1e6, 2.0 * window * iters / el);
            fflush(stdout);
        }
    }
    for (int w = 0; w < window; w++) free(rbuf[w]);
    free(rbuf); free(req); free(wt); free(sbuf);
    MPI_Finalize();
    return 0;
}
