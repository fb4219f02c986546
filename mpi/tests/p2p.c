/* Point-to-point: every send mode, blocking and nonblocking, around a
 * ring; PROC_NULL; ANY_SOURCE / ANY_TAG; Sendrecv(_replace); probes and
 * Get_count. Works on any number of ranks (1 included: the ring is self). */
#include "check.h"

#define N 1000

int main(int argc, char **argv) {
    check_init(&argc, &argv);
    int size, rank = check_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    static int out[N], in[N];
    MPI_Status st;
    MPI_Request r[2];
    int count = -1;

    for (int mode = 0; mode < 6; mode++) {
        for (int i = 0; i < N; i++) { out[i] = rank * 100000 + mode * 1000 + i; in[i] = -1; }
        /* The receive is posted before the barrier, so ready mode is legal. */
        OK(MPI_Irecv(in, N, MPI_INT, prev, mode, MPI_COMM_WORLD, &r[0]));
        OK(MPI_Barrier(MPI_COMM_WORLD));
        switch (mode) {
        case 0: OK(MPI_Send(out, N, MPI_INT, next, mode, MPI_COMM_WORLD)); r[1] = MPI_REQUEST_NULL; break;
        case 1: OK(MPI_Ssend(out, N, MPI_INT, next, mode, MPI_COMM_WORLD)); r[1] = MPI_REQUEST_NULL; break;
        case 2: OK(MPI_Rsend(out, N, MPI_INT, next, mode, MPI_COMM_WORLD)); r[1] = MPI_REQUEST_NULL; break;
        case 3: OK(MPI_Isend(out, N, MPI_INT, next, mode, MPI_COMM_WORLD, &r[1])); break;
        case 4: OK(MPI_Issend(out, N, MPI_INT, next, mode, MPI_COMM_WORLD, &r[1])); break;
        case 5: OK(MPI_Irsend(out, N, MPI_INT, next, mode, MPI_COMM_WORLD, &r[1])); break;
        }
        OK(MPI_Wait(&r[1], MPI_STATUS_IGNORE));
        OK(MPI_Wait(&r[0], &st));
        EQ(st.MPI_SOURCE, prev); EQ(st.MPI_TAG, mode);
        OK(MPI_Get_count(&st, MPI_INT, &count)); EQ(count, N);
        for (int i = 0; i < N; i++) if (in[i] != prev * 100000 + mode * 1000 + i) FAIL("mode %d: in[%d] = %d", mode, i, in[i]);
    }

    /* Large messages (rendezvous) with a blocking receive. */
    {
        int n = 1 << 20;
        double *big = malloc(n * sizeof *big), *got = malloc(n * sizeof *got);
        for (int i = 0; i < n; i++) big[i] = rank + i * 0.5;
        OK(MPI_Isend(big, n, MPI_DOUBLE, next, 77, MPI_COMM_WORLD, &r[0]));
        OK(MPI_Recv(got, n, MPI_DOUBLE, prev, 77, MPI_COMM_WORLD, &st));
        OK(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
        OK(MPI_Get_count(&st, MPI_DOUBLE, &count)); EQ(count, n);
        OK(MPI_Get_count(&st, MPI_BYTE, &count)); EQ(count, n * 8);
        for (int i = 0; i < n; i++) if (got[i] != prev + i * 0.5) FAIL("big[%d] = %g", i, got[i]);
        free(big); free(got);
    }

    /* MPI_PROC_NULL: completes at once, source PROC_NULL, tag ANY_TAG, count 0. */
    in[0] = 42;
    st.MPI_SOURCE = st.MPI_TAG = 12345;
    OK(MPI_Recv(in, N, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &st));
    EQ(st.MPI_SOURCE, MPI_PROC_NULL); EQ(st.MPI_TAG, MPI_ANY_TAG);
    OK(MPI_Get_count(&st, MPI_INT, &count)); EQ(count, 0); EQ(in[0], 42);
    OK(MPI_Send(out, N, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD));
    OK(MPI_Isend(out, N, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &r[0]));
    OK(MPI_Irecv(in, N, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &r[1]));
    OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));

    /* ANY_SOURCE / ANY_TAG: rank 0 collects one message from everyone, on
     * a communicator of its own (so later traffic on MPI_COMM_WORLD from
     * ranks that went ahead cannot match the wildcards). */
    MPI_Comm col;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &col));
    int v = rank * 7;
    OK(MPI_Isend(&v, 1, MPI_INT, 0, 100 + rank, col, &r[0]));
    if (rank == 0) {
        int seen = 0;
        for (int k = 0; k < size; k++) {
            int got = -1;
            OK(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, col, &st));
            EQ(got, st.MPI_SOURCE * 7); EQ(st.MPI_TAG, 100 + st.MPI_SOURCE);
            seen |= 1 << st.MPI_SOURCE;
        }
        EQ(seen, (1 << size) - 1);
    }
    OK(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
    OK(MPI_Comm_free(&col));

    /* Sendrecv and Sendrecv_replace around the ring. */
    int a = rank, b = -1;
    OK(MPI_Sendrecv(&a, 1, MPI_INT, next, 5, &b, 1, MPI_INT, prev, 5, MPI_COMM_WORLD, &st));
    EQ(b, prev); EQ(st.MPI_SOURCE, prev); EQ(st.MPI_TAG, 5);
    a = rank * 3;
    OK(MPI_Sendrecv_replace(&a, 1, MPI_INT, next, 6, prev, 6, MPI_COMM_WORLD, &st));
    EQ(a, prev * 3);

    /* Probe / Iprobe, then receive what was probed. */
    OK(MPI_Barrier(MPI_COMM_WORLD));
    short sv[3] = {1, 2, (short)rank};
    OK(MPI_Isend(sv, 3, MPI_SHORT, next, 8, MPI_COMM_WORLD, &r[0]));
    OK(MPI_Probe(prev, 8, MPI_COMM_WORLD, &st));
    EQ(st.MPI_SOURCE, prev); EQ(st.MPI_TAG, 8);
    OK(MPI_Get_count(&st, MPI_SHORT, &count)); EQ(count, 3);
    OK(MPI_Get_count(&st, MPI_INT, &count)); EQ(count, MPI_UNDEFINED);
    int flag = 0;
    while (!flag) OK(MPI_Iprobe(MPI_ANY_SOURCE, 8, MPI_COMM_WORLD, &flag, &st));
    EQ(st.MPI_SOURCE, prev);
    short sg[3];
    OK(MPI_Recv(sg, 3, MPI_SHORT, prev, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    EQ(sg[2], prev);
    OK(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
    OK(MPI_Iprobe(MPI_ANY_SOURCE, 8, MPI_COMM_WORLD, &flag, &st));
    EQ(flag, 0);

    check_done("p2p");
    return 0;
}
