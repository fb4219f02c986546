/* pipelined.c: large non-contiguous messages move without a staging copy
 * of the whole message (each fragment is gathered from, or scattered
 * into, the program's memory as it goes: ferry's segmented buffers).
 *
 * Between ranks 0 and 1 (the others join the barriers), with N doubles at
 * a stride of 2 (a double resized to an extent of 16 bytes: 128 MiB of
 * data in a 256 MiB span), and ints in blocks of 3 at a stride of 5 (blocks that
 * fragments cut in the middle). The types are built from `count`
 * elements of a small type, as a program describes a large strided array
 * (ferry's layouts list a type's blocks, so a vector of 2^24 blocks would
 * itself take 256 MiB to describe):
 *  - blocking Send/Recv strided on both sides, then the same data back
 *    with Isend/Irecv; Get_count and Get_elements_x report it;
 *  - strided to contiguous and contiguous to strided;
 *  - persistent Send_init/Recv_init started twice; Mprobe and Mrecv;
 *    Sendrecv_replace (last: it sets its outgoing data aside whole);
 *  - a small message into a large strided receive, and a strided receive
 *    too short for its message (MPI_ERR_TRUNCATE, a prefix written,
 *    nothing past it and no hole written);
 *  - each rank's peak resident memory, before Sendrecv_replace, stays
 *    below what the job held before plus its one buffer plus 64 MiB
 *    (packing the message whole, as ferry did before, added 128 MiB). */
#include "check.h"
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>

#define N (1 << 24) /* doubles of data */
#define SPAN ((size_t)2 * N - 1)
#define HOLE (-1.0)

static double value(long long i, int round) { return (double)(i * 7 + round); }

/* The strided buffer holding round `round`, holes set to HOLE. */
static void fill_strided(double *b, int round) {
    for (long long i = 0; i < N; i++) {
        b[2 * i] = value(i, round);
        if (2 * i + 1 < (long long)SPAN) b[2 * i + 1] = HOLE;
    }
}

/* The first `n` elements of round `round` strided, the rest `rest`, and
 * every hole untouched. */
static void verify_strided(const double *b, long long n, int round, double rest) {
    for (long long i = 0; i < N; i++) {
        double want = i < n ? value(i, round) : rest;
        if (b[2 * i] != want) FAIL("element %lld is %g, expected %g", i, b[2 * i], want);
        if (2 * i + 1 < (long long)SPAN && b[2 * i + 1] != HOLE) FAIL("hole after element %lld written", i);
    }
}

static void verify_dense(const double *b, int round) {
    for (long long i = 0; i < N; i++)
        if (b[i] != value(i, round)) FAIL("element %lld is %g, expected %g", i, b[i], value(i, round));
}

static void counted(MPI_Status *st, MPI_Datatype ty, int count, long long doubles) {
    int c = -2;
    MPI_Count e = -2;
    OK(MPI_Get_count(st, ty, &c));
    OK(MPI_Get_elements_x(st, ty, &e));
    EQ(c, count);
    EQ(e, doubles);
}

/* Ints in blocks of 3 at a stride of 5: fragments end inside blocks. */
static void odd_blocks(int peer, int rank) {
    enum { BLOCKS = 1 << 20 };
    MPI_Datatype three, t;
    OK(MPI_Type_contiguous(3, MPI_INT, &three));
    OK(MPI_Type_create_resized(three, 0, 5 * sizeof(int), &t));
    OK(MPI_Type_free(&three));
    OK(MPI_Type_commit(&t));
    size_t span = (size_t)BLOCKS * 5;
    int *b = malloc(span * sizeof(int));
    TRUE(b != NULL);
    for (size_t i = 0; i < span; i++) b[i] = (i % 5 < 3 && rank == 0) ? (int)(i * 3 + 1) : -7;
    if (rank == 0) {
        OK(MPI_Send(b, BLOCKS, t, peer, 20, MPI_COMM_WORLD));
    } else {
        MPI_Status st;
        OK(MPI_Recv(b, BLOCKS, t, peer, 20, MPI_COMM_WORLD, &st));
        counted(&st, MPI_INT, 3 * BLOCKS, 3 * BLOCKS);
        for (size_t i = 0; i < span; i++) {
            int want = i % 5 < 3 ? (int)(i * 3 + 1) : -7;
            if (b[i] != want) FAIL("int %zu is %d, expected %d", i, b[i], want);
        }
    }
    free(b);
    OK(MPI_Type_free(&t));
}

static long max_rss_kib(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

int main(int argc, char **argv) {
    check_init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size >= 2 && rank < 2) {
        int peer = 1 - rank;
        /* The job's own memory once the pair has talked (the ofi device's
         * provider holds about 90 MiB of buffers, shm about 12 MiB). */
        char ping = 0;
        OK(MPI_Sendrecv_replace(&ping, 1, MPI_CHAR, peer, 0, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        long base = max_rss_kib();
        MPI_Datatype strided;
        OK(MPI_Type_create_resized(MPI_DOUBLE, 0, 2 * sizeof(double), &strided));
        OK(MPI_Type_commit(&strided));
        double *b = malloc(SPAN * sizeof(double));
        TRUE(b != NULL);
        MPI_Status st;
        MPI_Request rq[2];

        /* Strided to strided, blocking, then back nonblocking. */
        if (rank == 0) {
            fill_strided(b, 0);
            OK(MPI_Send(b, N, strided, peer, 1, MPI_COMM_WORLD));
            memset(b, 0, SPAN * sizeof(double));
            fill_strided(b, 99);
            OK(MPI_Irecv(b, N, strided, peer, 2, MPI_COMM_WORLD, &rq[0]));
            OK(MPI_Wait(&rq[0], &st));
            counted(&st, strided, N, N);
            verify_strided(b, N, 1, 0);
        } else {
            fill_strided(b, 98);
            OK(MPI_Recv(b, N, strided, peer, 1, MPI_COMM_WORLD, &st));
            counted(&st, strided, N, N);
            verify_strided(b, N, 0, 0);
            fill_strided(b, 1);
            OK(MPI_Isend(b, N, strided, peer, 2, MPI_COMM_WORLD, &rq[0]));
            OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
        }

        /* Strided to contiguous (rank 0 sends), contiguous to strided. */
        if (rank == 0) {
            fill_strided(b, 2);
            OK(MPI_Send(b, N, strided, peer, 3, MPI_COMM_WORLD));
            OK(MPI_Recv(b, N, strided, peer, 4, MPI_COMM_WORLD, &st));
            verify_strided(b, N, 3, 0);
        } else {
            OK(MPI_Recv(b, N, MPI_DOUBLE, peer, 3, MPI_COMM_WORLD, &st));
            counted(&st, MPI_DOUBLE, N, N);
            verify_dense(b, 2);
            for (long long i = 0; i < N; i++) b[i] = value(i, 3);
            OK(MPI_Send(b, N, MPI_DOUBLE, peer, 4, MPI_COMM_WORLD));
        }

        /* Persistent, started twice. */
        if (rank == 0) {
            OK(MPI_Send_init(b, N, strided, peer, 5, MPI_COMM_WORLD, &rq[0]));
            for (int round = 10; round < 12; round++) {
                fill_strided(b, round);
                OK(MPI_Start(&rq[0]));
                OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
            }
        } else {
            OK(MPI_Recv_init(b, N, strided, peer, 5, MPI_COMM_WORLD, &rq[0]));
            for (int round = 10; round < 12; round++) {
                fill_strided(b, 0);
                OK(MPI_Start(&rq[0]));
                OK(MPI_Wait(&rq[0], &st));
                counted(&st, strided, N, N);
                verify_strided(b, N, round, 0);
            }
        }
        OK(MPI_Request_free(&rq[0]));

        /* Mprobe + Mrecv. */
        if (rank == 0) {
            fill_strided(b, 30);
            OK(MPI_Send(b, N, strided, peer, 7, MPI_COMM_WORLD));
        } else {
            MPI_Message m;
            OK(MPI_Mprobe(peer, 7, MPI_COMM_WORLD, &m, &st));
            fill_strided(b, 0);
            OK(MPI_Mrecv(b, N, strided, &m, &st));
            counted(&st, strided, N, N);
            verify_strided(b, N, 30, 0);
        }

        /* A small message into the large strided receive; then a receive
         * too short: the message's prefix, nothing past it. */
        OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
        if (rank == 0) {
            fill_strided(b, 40);
            OK(MPI_Send(b, 5, MPI_DOUBLE, peer, 8, MPI_COMM_WORLD));
            OK(MPI_Send(b, N, strided, peer, 9, MPI_COMM_WORLD));
        } else {
            fill_strided(b, 0);
            for (long long i = 0; i < N; i++) b[2 * i] = 0;
            OK(MPI_Recv(b, N, strided, peer, 8, MPI_COMM_WORLD, &st));
            counted(&st, MPI_DOUBLE, 5, 5);
            /* The five doubles in rank 0's strided memory: data, hole,
             * data, hole, data. */
            for (int i = 0; i < 5; i++) EQ(b[2 * i], i % 2 ? HOLE : value(i / 2, 40));
            EQ(b[10], 0);
            for (long long i = 0; i < N; i++) b[2 * i] = 0;
            ERR(MPI_ERR_TRUNCATE, MPI_Recv(b, N / 2, strided, peer, 9, MPI_COMM_WORLD, &st));
            verify_strided(b, N / 2, 40, 0);
        }
        OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));

        odd_blocks(peer, rank);

        long rss = max_rss_kib(), bound = base + (long)(SPAN * sizeof(double) / 1024) + 64 * 1024;
        if (rss > bound)
            FAIL("peak resident memory %ld KiB, above the job's own %ld KiB plus the buffer plus 64 MiB (%ld KiB)",
                 rss, base, bound);

        /* Last, as it sets the outgoing data aside whole (as MPI
         * implementations do): Sendrecv_replace, both ranks at once. */
        fill_strided(b, 20 + rank);
        OK(MPI_Sendrecv_replace(b, N, strided, peer, 6, peer, 6, MPI_COMM_WORLD, &st));
        counted(&st, strided, N, N);
        verify_strided(b, N, 20 + peer, 0);

        free(b);
        OK(MPI_Type_free(&strided));
    }
    check_done("pipelined");
    return 0;
}
