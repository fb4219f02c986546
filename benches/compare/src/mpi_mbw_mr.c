/* OSU-style multi-pair bandwidth and message rate (osu_mbw_mr semantics).
 * Ranks 0..P-1 send to P..2P-1 (P = np/2 pairs; 2 ranks here = 1 pair).
 * Per iteration: each sender posts WINDOW MPI_Isend, MPI_Waitall, receives a
 * 4-byte ack; each receiver posts WINDOW MPI_Irecv, MPI_Waitall, acks.
 * A barrier brackets the timed loop, as osu_mbw_mr does.
 *   MB/s   = P*size*WINDOW*iters / elapsed / 1e6
 *   msgs/s = P*WINDOW*iters / elapsed              (aggregate message rate)
 * Usage: mpi_mbw_mr [sizes] [window] [iters]  (default sizes 1..4M, window 64,
 * iters 100 (+10) up to 8 KiB, 20 (+2) above) */
#include "mpi_common.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np < 2 || np % 2) { if (!rank) fprintf(stderr, "needs an even number of ranks\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
    int pairs = np / 2, sender = rank < pairs, peer = sender ? rank + pairs : rank - pairs;
    long sizes[64];
    size_t maxsz;
    int nsz = sizes_arg(argc, argv, sizes, 0, 4, &maxsz);
    int window = argc > 2 ? atoi(argv[2]) : 64, iters_arg = argc > 3 ? atoi(argv[3]) : 0;
    report_binding(rank);
    char *sbuf = alloc_buf(maxsz, 'a'), *rbuf = alloc_buf(maxsz, 'b');
    MPI_Request *req = malloc(sizeof(MPI_Request) * window);
    if (!rank) printf("# mpi_mbw_mr (osu_mbw_mr style): %d pair(s), window %d\n# %-10s %12s %14s\n", pairs, window, "size", "MB/s", "msgs/s");
    for (int s = 0; s < nsz; s++) {
        int sz = (int)sizes[s];
        int iters = iters_arg ? iters_arg : (sz > 8192 ? 20 : 100), warm = iters / 10;
        double t0 = 0;
        for (int i = 0; i < warm + iters; i++) {
            if (i == warm) { MPI_Barrier(MPI_COMM_WORLD); t0 = MPI_Wtime(); }
            if (sender) {
                for (int w = 0; w < window; w++)
                    MPI_Isend(sbuf, sz, MPI_CHAR, peer, 100, MPI_COMM_WORLD, &req[w]);
                MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
                MPI_Recv(rbuf, 4, MPI_CHAR, peer, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                for (int w = 0; w < window; w++)
                    MPI_Irecv(rbuf, sz, MPI_CHAR, peer, 100, MPI_COMM_WORLD, &req[w]);
                MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
                MPI_Send(sbuf, 4, MPI_CHAR, peer, 101, MPI_COMM_WORLD);
            }
        }
        double el = MPI_Wtime() - t0, mx;
        MPI_Reduce(&el, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (!rank) {
            printf("  %-10d %12.1f %14.1f\n", sz, (double)pairs * sz * window * iters / mx / 1e6,
                   (double)pairs * window * iters / mx);
            fflush(stdout);
        }
    }
    free(req); free(sbuf); free(rbuf);
    MPI_Finalize();
    return 0;
}
