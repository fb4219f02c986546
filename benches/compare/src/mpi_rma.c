/* mpi_rma: OSU-style one-sided latency and bandwidth (osu_put_latency,
 * osu_get_latency, osu_acc_latency, osu_get_acc_latency, osu_fop_latency,
 * osu_cas_latency, osu_put_bw, osu_get_bw, osu_put_bibw), built with each
 * MPI's mpicc. Rank 0 is the origin, rank 1 the target, which waits in
 * MPI_Barrier meanwhile (so every MPI progresses it). Window from
 * MPI_Win_allocate.
 *
 * Latency (OSU's flush synchronization, inside MPI_Win_lock_all): each
 * operation is followed by MPI_Win_flush. Bandwidth (putbw, getbw): 64
 * operations, then one flush, per iteration; putbibw: both ranks put 64
 * times between two fences per iteration.
 *
 * Usage: mpi_rma OP [SIZES] [ITERS] [WARMUP]
 *   OP: put | get | acc (MPI_SUM of doubles) | getacc (MPI_Get_accumulate,
 *   MPI_SUM of doubles) | fop (MPI_SUM, one long long) | cas (one long
 *   long) | putbw | getbw | putbibw; SIZES not for fop and cas.
 * Output: '# op' header, then rows `size avg p50`: µs per operation with
 * its flush, or MB/s for the bandwidth ops (p50 over 100 batches of
 * ITERS/100). */
#include "mpi_common.h"

#define WINDOW 64

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc < 2 || n != 2) {
        if (rank == 0) fprintf(stderr, "usage: mpi_rma put|get|acc|getacc|fop|cas|putbw|getbw|putbibw [sizes] [iters] [warmup] (2 ranks)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *op = argv[1];
    int bw = !strcmp(op, "putbw") || !strcmp(op, "getbw"), bibw = !strcmp(op, "putbibw");
    int fixed = !strcmp(op, "fop") || !strcmp(op, "cas");
    long sizes[64];
    int nsizes = fixed ? (sizes[0] = 8, 1) : (argc > 2 ? parse_sizes(argv[2], sizes, 64) : (sizes[0] = 8, 1));
    int iters = argc > 3 ? atoi(argv[3]) : 10000, warm = argc > 4 ? atoi(argv[4]) : 1000;
    if (iters < 100) iters = 100;
    long maxsz = 8;
    for (int i = 0; i < nsizes; i++) if (sizes[i] > maxsz) maxsz = sizes[i];
    report_binding(rank);
    char *win_mem;
    MPI_Win win;
    MPI_Win_allocate(maxsz, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win_mem, &win);
    char *src = calloc(1, maxsz), *dst = calloc(1, maxsz);
    long long one = 1, got = 0, zero = 0;
    double *batch = malloc(sizeof(double) * 100);
    if (rank == 0 && (bw || bibw)) printf("# mpi_rma %s (%d per synchronization)\n# size MB/s p50_MB/s\n", op, WINDOW);
    else if (rank == 0) printf("# mpi_rma %s (lock_all, flush after each)\n# size avg_us p50_us\n", op);
    for (int si = 0; si < nsizes; si++) {
        long sz = sizes[si];
        MPI_Barrier(MPI_COMM_WORLD);
        if (bibw) {
            int per = iters / 100;
            double total = 0;
            for (int b = -1; b < 100; b++) {
                int count = b < 0 ? warm : per;
                double t0 = MPI_Wtime();
                for (int i = 0; i < count; i++) {
                    MPI_Win_fence(0, win);
                    for (int w = 0; w < WINDOW; w++)
                        MPI_Put(src, sz, MPI_CHAR, 1 - rank, 0, sz, MPI_CHAR, win);
                    MPI_Win_fence(0, win);
                }
                double t = MPI_Wtime() - t0;
                if (b >= 0) { batch[b] = 2.0 * sz * WINDOW / (t / count) / 1e6; total += t; }
            }
            if (rank == 0) {
                printf("%ld %.1f %.1f\n", sz, 2.0 * sz * WINDOW * per * 100 / total / 1e6, pct(batch, 100, 50));
                fflush(stdout);
            }
        } else if (rank == 0 && bw) {
            MPI_Win_lock_all(0, win);
            int per = iters / 100;
            double total = 0;
            for (int b = -1; b < 100; b++) {
                int count = b < 0 ? warm : per;
                double t0 = MPI_Wtime();
                for (int i = 0; i < count; i++) {
                    for (int w = 0; w < WINDOW; w++) {
                        if (!strcmp(op, "putbw")) MPI_Put(src, sz, MPI_CHAR, 1, 0, sz, MPI_CHAR, win);
                        else MPI_Get(dst, sz, MPI_CHAR, 1, 0, sz, MPI_CHAR, win);
                    }
                    MPI_Win_flush(1, win);
                }
                double t = MPI_Wtime() - t0;
                if (b >= 0) { batch[b] = (double)sz * WINDOW / (t / count) / 1e6; total += t; }
            }
            MPI_Win_unlock_all(win);
            printf("%ld %.1f %.1f\n", sz, (double)sz * WINDOW * per * 100 / total / 1e6, pct(batch, 100, 50));
            fflush(stdout);
        } else if (rank == 0) {
            MPI_Win_lock_all(0, win);
            int per = iters / 100;
            double total = 0;
            for (int b = -1; b < 100; b++) {
                int count = b < 0 ? warm : per;
                double t0 = MPI_Wtime();
                for (int i = 0; i < count; i++) {
                    if (!strcmp(op, "put")) MPI_Put(src, sz, MPI_CHAR, 1, 0, sz, MPI_CHAR, win);
                    else if (!strcmp(op, "get")) MPI_Get(dst, sz, MPI_CHAR, 1, 0, sz, MPI_CHAR, win);
                    else if (!strcmp(op, "acc")) MPI_Accumulate(src, sz / 8, MPI_DOUBLE, 1, 0, sz / 8, MPI_DOUBLE, MPI_SUM, win);
                    else if (!strcmp(op, "getacc")) MPI_Get_accumulate(src, sz / 8, MPI_DOUBLE, dst, sz / 8, MPI_DOUBLE, 1, 0, sz / 8, MPI_DOUBLE, MPI_SUM, win);
                    else if (!strcmp(op, "fop")) MPI_Fetch_and_op(&one, &got, MPI_LONG_LONG, 1, 0, MPI_SUM, win);
                    else MPI_Compare_and_swap(&one, &zero, &got, MPI_LONG_LONG, 1, 0, win);
                    MPI_Win_flush(1, win);
                }
                double t = MPI_Wtime() - t0;
                if (b >= 0) { batch[b] = t / count * 1e6; total += t; }
            }
            MPI_Win_unlock_all(win);
            printf("%ld %.3f %.3f\n", sz, total / (per * 100) * 1e6, pct(batch, 100, 50));
            fflush(stdout);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_free(&win);
    free(src); free(dst); free(batch);
    MPI_Finalize();
    return 0;
}
