/* MPI_ERRORS_ARE_FATAL (the default): an error prints a message naming the
 * call and the error class, and ends the job with a non-zero status. The
 * runner (ci/mpi-test.sh) expects this program to fail with that message.
 * The line after the bad call must never run. */
#include "check.h"

int main(int argc, char **argv) {
    check_init(&argc, &argv);
    int size, x = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (check_rank == 0) {
        MPI_Send(&x, 1, MPI_INT, size + 1, 0, MPI_COMM_WORLD);
        printf("UNREACHABLE: MPI_Send with a bad rank returned\n");
        return 0;
    }
    /* The others wait for a message that never comes: the job must be
     * ended by rank 0's failure. */
    MPI_Recv(&x, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("UNREACHABLE: rank %d received\n", check_rank);
    return 0;
}
