/* bigmsg.c: a message above 2 GiB (2^28 + 1 doubles, 2,147,483,656 bytes:
 * more bytes than an int holds, with an int count), from rank 0 to rank 1
 * through MPI_Send and MPI_Recv, then back through MPI_Isend and
 * MPI_Irecv, each checked element by element; MPI_Get_count and
 * MPI_Get_elements_x report it. It runs on jobs of exactly 2 ranks (CI's
 * 2-rank runs on shm and on ofi); other sizes only pass through, since
 * moving 2 GiB on every size from 1 to 8 cost CI two minutes.
 * (MPICH's pt2pt/large_message sends 2.2 GB the same way.) */
#include "check.h"
#include <stdint.h>

#define COUNT ((1 << 28) + 1)

static double value(long long i, int round) { return (double)(i * 3 + round); }

static void fill(double *b, int round) {
    for (long long i = 0; i < COUNT; i++) b[i] = value(i, round);
}

static void verify(const double *b, int round) {
    for (long long i = 0; i < COUNT; i++)
        if (b[i] != value(i, round)) FAIL("element %lld is %g, expected %g", i, b[i], value(i, round));
}

static void got(MPI_Status *st, int source) {
    int count = -1;
    MPI_Count elements = -1;
    OK(MPI_Get_count(st, MPI_DOUBLE, &count));
    OK(MPI_Get_elements_x(st, MPI_DOUBLE, &elements));
    EQ(count, COUNT);
    EQ(elements, COUNT);
    EQ(st->MPI_SOURCE, source);
}

int main(int argc, char **argv) {
    check_init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size == 2) {
        double *buf = malloc((size_t)COUNT * sizeof(double));
        TRUE(buf != NULL);
        MPI_Status st;
        MPI_Request rq;
        if (rank == 0) {
            fill(buf, 0);
            OK(MPI_Send(buf, COUNT, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD));
            OK(MPI_Irecv(buf, COUNT, MPI_DOUBLE, 1, 8, MPI_COMM_WORLD, &rq));
            OK(MPI_Wait(&rq, &st));
            got(&st, 1);
            verify(buf, 1);
        } else {
            OK(MPI_Recv(buf, COUNT, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD, &st));
            got(&st, 0);
            verify(buf, 0);
            fill(buf, 1);
            OK(MPI_Isend(buf, COUNT, MPI_DOUBLE, 0, 8, MPI_COMM_WORLD, &rq));
            OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        }
        free(buf);
    }
    check_done("bigmsg");
    return 0;
}
