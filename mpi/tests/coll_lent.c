/* coll_lent.c: nonblocking and persistent collectives on contiguous data
 * copy nothing in or out: ferry reads and writes the program's buffers
 * where they lie (the C layer lends them until the request completes).
 *
 * Every buffer is allocated and touched first. Each collective runs on
 * 32 MiB of data, blocking first (which lends the buffers for the call:
 * whatever the transport itself holds, a node region's pages, is then
 * resident), then nonblocking, each checking its result; the nonblocking
 * one may not raise the rank's peak resident memory by more than SLACK
 * (a copy of the input, or a result vector copied out at completion, as
 * the C layer made before, is 8 to 32 MiB more). Covered: Ibcast,
 * Iallgather, Ialltoallv and Igatherv with displacements the prefix sums
 * of the counts (blocks that tile one span), Ireduce to a root, and a
 * persistent Bcast_init started twice. */
#include "check.h"
#include <string.h>
#include <sys/resource.h>

#define MIB (1024 * 1024)
#define BYTES (32 * MIB)
#define SLACK_KIB (6 * 1024)

static long max_rss_kib(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

static long base_kib;

/* The peak so far is the mark the next nonblocking call is held to. */
static void mark(void) { base_kib = max_rss_kib(); }

static void no_growth(const char *what) {
    long rss = max_rss_kib();
    if (rss > base_kib + SLACK_KIB)
        FAIL("%s: peak resident memory %ld KiB, over %ld KiB before plus %d KiB", what, rss,
             base_kib, SLACK_KIB);
}

static void *touched(size_t n) {
    char *p = malloc(n);
    TRUE(p != NULL);
    memset(p, 1, n);
    return p;
}

int main(int argc, char **argv) {
    check_init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const size_t n = BYTES / sizeof(int); /* ints in a whole buffer */
    const size_t blk = n / (size_t)size;  /* ints per rank's block */
    int *a = touched(BYTES), *b = touched(BYTES);
    int *counts = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    for (int i = 0; i < size; i++) {
        counts[i] = (int)blk;
        displs[i] = (int)(i * blk);
    }
    MPI_Request rq;
    /* Every rank has talked to every other (the devices' own buffers). */
    OK(MPI_Alltoall(a, 1, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD));
    OK(MPI_Barrier(MPI_COMM_WORLD));

    /* Ibcast of the whole buffer from rank 0. */
    OK(MPI_Bcast(a, (int)n, MPI_INT, 0, MPI_COMM_WORLD));
    mark();
    for (size_t i = 0; i < n; i++) a[i] = rank == 0 ? (int)i : -1;
    OK(MPI_Ibcast(a, (int)n, MPI_INT, 0, MPI_COMM_WORLD, &rq));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    for (size_t i = 0; i < n; i += 4097) EQ(a[i], (int)i);
    no_growth("MPI_Ibcast");

    /* Iallgather: each rank's block of a into its place in b. */
    OK(MPI_Allgather(a, (int)blk, MPI_INT, b, (int)blk, MPI_INT, MPI_COMM_WORLD));
    mark();
    for (size_t i = 0; i < blk; i++) a[i] = rank * 1000003 + (int)i;
    OK(MPI_Iallgather(a, (int)blk, MPI_INT, b, (int)blk, MPI_INT, MPI_COMM_WORLD, &rq));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    for (int r = 0; r < size; r++)
        for (size_t i = 0; i < blk; i += 1021) EQ(b[r * blk + i], r * 1000003 + (int)i);
    no_growth("MPI_Iallgather");

    /* Ialltoallv: block r of a to rank r, into block `rank` of b there. */
    OK(MPI_Alltoallv(a, counts, displs, MPI_INT, b, counts, displs, MPI_INT, MPI_COMM_WORLD));
    mark();
    for (int r = 0; r < size; r++)
        for (size_t i = 0; i < blk; i++) a[r * blk + i] = rank * 7919 + r * 31 + (int)(i % 977);
    OK(MPI_Ialltoallv(a, counts, displs, MPI_INT, b, counts, displs, MPI_INT, MPI_COMM_WORLD, &rq));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    for (int r = 0; r < size; r++)
        for (size_t i = 0; i < blk; i += 1009) EQ(b[r * blk + i], r * 7919 + rank * 31 + (int)(i % 977));
    no_growth("MPI_Ialltoallv");

    /* Igatherv of every rank's block into rank 0's b. */
    OK(MPI_Gatherv(a, (int)blk, MPI_INT, b, counts, displs, MPI_INT, 0, MPI_COMM_WORLD));
    mark();
    for (size_t i = 0; i < blk; i++) a[i] = rank * 65537 + (int)i;
    OK(MPI_Igatherv(a, (int)blk, MPI_INT, b, counts, displs, MPI_INT, 0, MPI_COMM_WORLD, &rq));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    if (rank == 0)
        for (int r = 0; r < size; r++)
            for (size_t i = 0; i < blk; i += 1013) EQ(b[r * blk + i], r * 65537 + (int)i);
    no_growth("MPI_Igatherv");

    /* Ireduce of the whole buffer to rank 0 (MPI_SUM of ints). */
    OK(MPI_Reduce(a, b, (int)n, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD));
    mark();
    for (size_t i = 0; i < n; i++) a[i] = (int)(i % 1000) + rank;
    OK(MPI_Ireduce(a, b, (int)n, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, &rq));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    if (rank == 0)
        for (size_t i = 0; i < n; i += 4099)
            EQ(b[i], size * (int)(i % 1000) + size * (size - 1) / 2);
    no_growth("MPI_Ireduce");

    /* A persistent Bcast_init, started twice on new contents. */
    mark();
    OK(MPI_Bcast_init(b, (int)n, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &rq));
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < n; i++) b[i] = rank == 0 ? (int)i * 3 + round : 0;
        OK(MPI_Start(&rq));
        OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        for (size_t i = 0; i < n; i += 4093) EQ(b[i], (int)i * 3 + round);
    }
    OK(MPI_Request_free(&rq));
    no_growth("MPI_Bcast_init");

    free(a);
    free(b);
    free(counts);
    free(displs);
    check_done("coll_lent");
}
