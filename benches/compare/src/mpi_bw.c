/* OSU-style uni-directional windowed bandwidth (osu_bw semantics), 2 ranks.
 * Per iteration: rank 0 posts WINDOW MPI_Isend (same buffer), MPI_Waitall,
 * then MPI_Recv a 4-byte ack; rank 1 posts WINDOW MPI_Irecv, MPI_Waitall and
 * sends the ack.  OSU iteration counts: 100 (+10 warm-up) up to 8 KiB, 20 (+2) above.
 *   MB/s     = size*WINDOW*iters / elapsed / 1e6     (the osu_bw figure)
 *   p50_MB/s = size*WINDOW / median(per-iteration time) / 1e6
 *   msgs/s   = WINDOW*iters / elapsed                 (message rate)
 * Usage: mpi_bw [sizes] [window] [iters]   (default sizes 1..4M, window 64) */
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
    char *sbuf = alloc_buf(maxsz, 'a'), *rbuf = alloc_buf(maxsz, 'b');
    MPI_Request *req = malloc(sizeof(MPI_Request) * window);
    double *wt = malloc(sizeof(double) * (iters_arg > 100 ? iters_arg : 100));
    if (!rank) printf("# mpi_bw (osu_bw style): window %d, MB/s = 1e6 B/s\n# %-10s %12s %12s %14s\n", window, "size", "MB/s", "p50_MB/s", "msgs/s");
    for (int s = 0; s < nsz; s++) {
        int sz = (int)sizes[s];
        int iters = iters_arg ? iters_arg : (sz > 8192 ? 20 : 100), warm = iters / 10;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = 0, t1;
        if (rank == 0) {
            for (int i = 0; i < warm + iters; i++) {
                if (i == warm) t0 = MPI_Wtime();
                double a = MPI_Wtime();
                for (int w = 0; w < window; w++)
                    MPI_Isend(sbuf, sz, MPI_CHAR, 1, 100, MPI_COMM_WORLD, &req[w]);
                MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
                MPI_Recv(rbuf, 4, MPI_CHAR, 1, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (i >= warm) wt[i - warm] = MPI_Wtime() - a;
            }
            t1 = MPI_Wtime();
            double el = t1 - t0;
            double med = pct(wt, iters, 50);
            printf("  %-10d %12.1f %12.1f %14.1f\n", sz, (double)sz * window * iters / el / 1e6,
                   (double)sz * window / med / 1e6, (double)window * iters / el);
            fflush(stdout);
        } else {
            for (int i = 0; i < warm + iters; i++) {
                for (int w = 0; w < window; w++)
                    MPI_Irecv(rbuf, sz, MPI_CHAR, 0, 100, MPI_COMM_WORLD, &req[w]);
                MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
                MPI_Send(sbuf, 4, MPI_CHAR, 0, 101, MPI_COMM_WORLD);
            }
        }
    }
    free(req); free(wt); free(sbuf); free(rbuf);
    MPI_Finalize();
    return 0;
}
