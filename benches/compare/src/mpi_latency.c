/* OSU-style ping-pong latency (osu_latency semantics), 2 ranks.
 * Per size: MPI_Barrier, warm-up, then ITERS timed round trips of blocking
 * MPI_Send/MPI_Recv (tag 1).  avg_us = elapsed / (2 * iters) is the osu_latency
 * figure, from a loop with osu_latency's two clock reads; p50_us / min_us are
 * the per-round-trip median / minimum, halved, from a second loop of ITERS
 * round trips timed one by one (a clock read per round trip would otherwise
 * add its own cost to the average).
 * OSU iteration counts: 10000 (+100 warm-up) up to 8 KiB, 1000 (+10) above.
 * Usage: mpi_latency [sizes] [iters] [warmup]   sizes: "0,8,64k,1m" (default OSU range 0..4M) */
#include "mpi_common.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    need_two(rank);
    long sizes[64];
    size_t maxsz;
    int nsz = sizes_arg(argc, argv, sizes, 1, 1, &maxsz);
    int iters_arg = argc > 2 ? atoi(argv[2]) : 0, warm_arg = argc > 3 ? atoi(argv[3]) : -1;
    report_binding(rank);
    char *sbuf = alloc_buf(maxsz, 'a'), *rbuf = alloc_buf(maxsz, 'b');
    double *rt = malloc(sizeof(double) * (iters_arg > 10000 ? iters_arg : 10000));
    if (!rank) printf("# mpi_latency (osu_latency style): one-way latency in us = round trip / 2\n# %-10s %12s %12s %12s\n", "size", "avg_us", "p50_us", "min_us");
    for (int s = 0; s < nsz; s++) {
        int sz = (int)sizes[s];
        int iters = iters_arg ? iters_arg : (sz > 8192 ? 1000 : 10000);
        int warm = warm_arg >= 0 ? warm_arg : (sz > 8192 ? 10 : 100);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = 0, t1;
        if (rank == 0) {
            for (int i = 0; i < warm + iters; i++) {
                if (i == warm) t0 = MPI_Wtime();
                MPI_Send(sbuf, sz, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(rbuf, sz, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            t1 = MPI_Wtime();
            for (int i = 0; i < iters; i++) {
                double a = MPI_Wtime();
                MPI_Send(sbuf, sz, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(rbuf, sz, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                rt[i] = MPI_Wtime() - a;
            }
            double avg = (t1 - t0) * 1e6 / (2.0 * iters);
            double med = pct(rt, iters, 50) * 1e6 / 2, mn = rt[0] * 1e6 / 2;
            printf("  %-10d %12.3f %12.3f %12.3f\n", sz, avg, med, mn);
            fflush(stdout);
        } else {
            for (int i = 0; i < warm + 2 * iters; i++) {
                MPI_Recv(rbuf, sz, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(sbuf, sz, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
            }
        }
    }
    free(rt); free(sbuf); free(rbuf);
    MPI_Finalize();
    return 0;
}
