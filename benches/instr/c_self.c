/* The C counterpart of `ferry-instr self` (benches/instr/c-overhead.sh):
 * blocking MPI_Send and MPI_Recv of 8 bytes to this rank itself, each in
 * its own non-inlined call_* function for callgrind to collect. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static void call_send_c(const char *b, int me) {
    MPI_Send(b, 8, MPI_BYTE, me, 1, MPI_COMM_WORLD);
}

__attribute__((noinline)) static void call_recv_c(char *b, int me) {
    MPI_Recv(b, 8, MPI_BYTE, me, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv) {
    int pairs = argc > 1 ? atoi(argv[1]) : 4000, me;
    char send[8], recv[8] = {0};
    memset(send, 7, sizeof send);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    for (int i = 0; i < 200; i++) { call_send_c(send, me); call_recv_c(recv, me); }
    for (int i = 0; i < pairs; i++) { call_send_c(send, me); call_recv_c(recv, me); }
    if (memcmp(send, recv, sizeof send) != 0) { fprintf(stderr, "c_self: wrong bytes\n"); return 1; }
    printf("pairs %d\n", pairs);
    MPI_Finalize();
    return 0;
}
