/* OSU-style nonblocking collective overlap, the method of osu_ibarrier,
 * osu_ibcast, osu_iallreduce and osu_ialltoall (OMB 7), written for ferry's
 * comparison harness; the same method as `ferry-bench iOP`.
 *
 * Per size, on every rank, two loops of warm-up + ITERS operations:
 *   pure:    post, MPI_Wait at once; pure time = timed total / ITERS;
 *   overlap: post, busy-compute for this rank's pure time (arithmetic, no MPI
 *            call), MPI_Wait; an untimed MPI_Barrier after each.
 * Columns, averaged over the ranks: overall_us (post + compute + wait),
 * compute_us, pure_us, overlap_pct = max(0, 100 (1 - (overall - compute) /
 * pure)), OSU's formula (without its optional MPI_Test calls).
 * ibarrier adds wait_cpu_pct: rank 0 posts an MPI_Ibarrier and waits while
 * rank 1 sleeps BLOCK seconds before posting its own; the CPU time rank 0's
 * process used meanwhile (getrusage), in % of one core ("nan" if BLOCK is 0).
 * iallreduce: MPI_DOUBLE sum (size a multiple of 8); ibcast from rank 0;
 * ialltoall: size per rank.  OSU's counts: 1000 (+100) up to 8 KiB, 100 (+10)
 * above.
 *
 * Usage: mpi_nbc OP [sizes] [iters] [warmup] [block_secs]
 *   OP: ibarrier ibcast iallreduce ialltoall;  block_secs: default 2 */
#include "mpi_common.h"
#include <math.h>
#include <sys/resource.h>

enum op { IBARRIER, IBCAST, IALLREDUCE, IALLTOALL, NOPS };
static const char *names[NOPS] = {"ibarrier", "ibcast", "iallreduce", "ialltoall"};

static void post(int op, void *s, void *r, int sz, MPI_Request *req) {
    switch (op) {
    case IBARRIER: MPI_Ibarrier(MPI_COMM_WORLD, req); break;
    case IBCAST: MPI_Ibcast(s, sz, MPI_CHAR, 0, MPI_COMM_WORLD, req); break;
    case IALLREDUCE: MPI_Iallreduce(s, r, sz / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, req); break;
    case IALLTOALL: MPI_Ialltoall(s, sz, MPI_CHAR, r, sz, MPI_CHAR, MPI_COMM_WORLD, req); break;
    }
}

/* busy for `secs`: arithmetic that never calls MPI (OSU's dummy_compute) */
static volatile double sink;
static void compute_for(double secs) {
    double t0 = MPI_Wtime(), x = 1.0;
    while (MPI_Wtime() - t0 < secs)
        for (int i = 0; i < 64; i++) x = x * 1.0000001 + 1e-9;
    sink = x;
}

static double cpu_secs(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

/* rank 0's CPU % of one core while its ibarrier wait is blocked `block` s */
static double cpu_while_blocked(int rank, double block) {
    if (block <= 0) return NAN;
    MPI_Request r;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != 0) {
        usleep((useconds_t)(block * 1e6));
        MPI_Ibarrier(MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        return NAN;
    }
    double t0 = MPI_Wtime(), c0 = cpu_secs();
    MPI_Ibarrier(MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    return 100.0 * (cpu_secs() - c0) / (MPI_Wtime() - t0);
}

int main(int argc, char **argv) {
    int rank, np;
    int op = init_pick(&argc, &argv, names, NOPS,
                       "mpi_nbc ibarrier|ibcast|iallreduce|ialltoall [sizes] [iters] [warmup] [block_secs]", &rank, &np);
    long sizes[64];
    int nsz = 0;
    if (argc > 2) nsz = parse_sizes(argv[2], sizes, 64);
    else if (op == IBARRIER) sizes[nsz++] = 0;
    else for (long s = op == IALLREDUCE ? 8 : 1; s <= (1 << 20); s <<= 1) sizes[nsz++] = s;
    int iters_arg = argc > 3 ? atoi(argv[3]) : 0, warm_arg = argc > 4 ? atoi(argv[4]) : -1;
    double block = argc > 5 ? atof(argv[5]) : 2.0;
    size_t maxsz = 8;
    for (int i = 0; i < nsz; i++) {
        if (op == IALLREDUCE && sizes[i] % 8) {
            if (!rank) fprintf(stderr, "mpi_nbc iallreduce: size %ld is not a multiple of 8 (MPI_DOUBLE)\n", sizes[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        if ((size_t)sizes[i] > maxsz) maxsz = sizes[i];
    }
    report_binding(rank);
    char *sbuf = alloc_buf(maxsz * np, 'a'), *rbuf = alloc_buf(maxsz * np, 'b');
    if (op == IALLREDUCE)
        for (size_t i = 0; i < maxsz / 8; i++) ((double *)sbuf)[i] = rank + 1.0;
    if (!rank)
        printf("# mpi_nbc %s (osu_%s style): us averaged over %d ranks; overlap %% as OSU\n"
               "# %-10s %12s %12s %12s %12s%s\n", names[op], names[op], np,
               "size", "overall_us", "compute_us", "pure_us", "overlap_pct", op == IBARRIER ? "  wait_cpu_pct" : "");
    for (int k = 0; k < nsz; k++) {
        int sz = (int)sizes[k];
        int iters = iters_arg ? iters_arg : (sz > 8192 ? 100 : 1000);
        int warm = warm_arg >= 0 ? warm_arg : (sz > 8192 ? 10 : 100);
        MPI_Request req;
        MPI_Barrier(MPI_COMM_WORLD);
        double pure = 0;
        for (int i = 0; i < warm + iters; i++) {
            double t0 = MPI_Wtime();
            post(op, sbuf, rbuf, sz, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            if (i >= warm) pure += MPI_Wtime() - t0;
        }
        double target = pure / iters;
        MPI_Barrier(MPI_COMM_WORLD);
        double overall = 0, comp = 0;
        for (int i = 0; i < warm + iters; i++) {
            double t0 = MPI_Wtime();
            post(op, sbuf, rbuf, sz, &req);
            double tc = MPI_Wtime();
            compute_for(target);
            double dc = MPI_Wtime() - tc;
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            double dt = MPI_Wtime() - t0;
            if (i >= warm) { overall += dt; comp += dc; }
            MPI_Barrier(MPI_COMM_WORLD);
        }
        double cpu = op == IBARRIER ? cpu_while_blocked(rank, block) : NAN;
        double mine[3] = {overall * 1e6 / iters, comp * 1e6 / iters, pure * 1e6 / iters}, sum[3];
        MPI_Reduce(mine, sum, 3, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (!rank) {
            double o = sum[0] / np, c = sum[1] / np, p = sum[2] / np;
            double ov = 100.0 * (1.0 - (o - c) / p);
            if (ov < 0) ov = 0;
            printf("  %-10d %12.3f %12.3f %12.3f %12.3f", sz, o, c, p, ov);
            if (op == IBARRIER) printf(" %14.3f", cpu);
            printf("\n");
            fflush(stdout);
        }
    }
    free(sbuf); free(rbuf);
    MPI_Finalize();
    return 0;
}
