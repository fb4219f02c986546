/* MPI_Isendrecv and MPI_Isendrecv_replace (MPI 4.0): ring exchanges with
 * contiguous and non-contiguous types, completed by Wait, a Test loop,
 * Waitall, Waitany and Testsome; Request_get_status; MPI_PROC_NULL; a
 * request freed while pending still fills its buffer. */
#include "check.h"

#define N 8

int main(int argc, char **argv) {
    check_init(&argc, &argv);
    int size, rank = check_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Status st;
    MPI_Request req, reqs[2];
    int out[N], in[N], count, flag;

    /* Plain ring: ints out to next, in from prev. */
    for (int i = 0; i < N; i++) { out[i] = rank * 100 + i; in[i] = -1; }
    OK(MPI_Isendrecv(out, N, MPI_INT, next, 3, in, N, MPI_INT, prev, 3, MPI_COMM_WORLD, &req));
    OK(MPI_Wait(&req, &st));
    TRUE(req == MPI_REQUEST_NULL);
    EQ(st.MPI_SOURCE, prev); EQ(st.MPI_TAG, 3);
    OK(MPI_Get_count(&st, MPI_INT, &count)); EQ(count, N);
    for (int i = 0; i < N; i++) EQ(in[i], prev * 100 + i);

    /* A vector on both sides (every other int), completed by a Test loop,
     * with Request_get_status first. */
    MPI_Datatype every2;
    OK(MPI_Type_vector(N / 2, 1, 2, MPI_INT, &every2));
    OK(MPI_Type_commit(&every2));
    for (int i = 0; i < N; i++) in[i] = -1;
    OK(MPI_Isendrecv(out, 1, every2, next, 4, in, 1, every2, prev, 4, MPI_COMM_WORLD, &req));
    do {
        OK(MPI_Request_get_status(req, &flag, &st));
    } while (!flag);
    EQ(st.MPI_SOURCE, prev);
    flag = 0;
    while (!flag) OK(MPI_Test(&req, &flag, &st));
    TRUE(req == MPI_REQUEST_NULL);
    EQ(st.MPI_TAG, 4);
    OK(MPI_Get_count(&st, every2, &count)); EQ(count, 1);
    for (int i = 0; i < N; i++) EQ(in[i], i % 2 ? -1 : prev * 100 + i);

    /* Replace, contiguous and through the vector, completed by Waitall. */
    int buf1[N], buf2[N];
    for (int i = 0; i < N; i++) { buf1[i] = rank * 10 + i; buf2[i] = rank * 1000 + i; }
    OK(MPI_Isendrecv_replace(buf1, N, MPI_INT, next, 5, prev, 5, MPI_COMM_WORLD, &reqs[0]));
    OK(MPI_Isendrecv_replace(buf2, 1, every2, prev, 6, next, 6, MPI_COMM_WORLD, &reqs[1]));
    MPI_Status sts[2];
    OK(MPI_Waitall(2, reqs, sts));
    EQ(sts[0].MPI_SOURCE, prev); EQ(sts[1].MPI_SOURCE, next);
    for (int i = 0; i < N; i++) {
        EQ(buf1[i], prev * 10 + i);
        EQ(buf2[i], i % 2 ? rank * 1000 + i : next * 1000 + i);
    }

    /* Waitany and Testsome over two pairs. */
    for (int i = 0; i < N; i++) in[i] = -1;
    int in2[N];
    OK(MPI_Isendrecv(out, N, MPI_INT, next, 7, in, N, MPI_INT, prev, 7, MPI_COMM_WORLD, &reqs[0]));
    OK(MPI_Isendrecv(out, N, MPI_INT, prev, 8, in2, N, MPI_INT, next, 8, MPI_COMM_WORLD, &reqs[1]));
    int idx;
    OK(MPI_Waitany(2, reqs, &idx, &st));
    TRUE(idx == 0 || idx == 1);
    TRUE(reqs[idx] == MPI_REQUEST_NULL);
    int done = 1;
    while (done < 2) {
        int outcount, idxs[2];
        OK(MPI_Testsome(2, reqs, &outcount, idxs, sts));
        if (outcount != MPI_UNDEFINED) done += outcount;
    }
    for (int i = 0; i < N; i++) { EQ(in[i], prev * 100 + i); EQ(in2[i], next * 100 + i); }

    /* MPI_PROC_NULL on both sides: complete at once, source PROC_NULL. */
    OK(MPI_Isendrecv(out, N, MPI_INT, MPI_PROC_NULL, 1, in, N, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &req));
    OK(MPI_Wait(&req, &st));
    EQ(st.MPI_SOURCE, MPI_PROC_NULL);
    OK(MPI_Get_count(&st, MPI_INT, &count)); EQ(count, 0);

    /* Freed while pending: the staged (vector) receive still lands. The
     * tag-10 message from prev is sent after its tag-9 one, so once it is
     * here the freed receive has matched, and the call finished it. */
    for (int i = 0; i < N; i++) in[i] = -1;
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Isendrecv(out, 1, every2, next, 9, in, 1, every2, prev, 9, MPI_COMM_WORLD, &req));
    OK(MPI_Request_free(&req));
    TRUE(req == MPI_REQUEST_NULL);
    int token = rank, got = -1;
    OK(MPI_Sendrecv(&token, 1, MPI_INT, next, 10, &got, 1, MPI_INT, prev, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    EQ(got, prev);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < N; i++) EQ(in[i], i % 2 ? -1 : prev * 100 + i);

    OK(MPI_Type_free(&every2));
    check_done("isendrecv");
    return 0;
}
