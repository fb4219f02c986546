/* partitioned.c: partitioned communication (MPI 4.0). Every rank sends to
 * the next and receives from the previous (a ring; on one rank, itself):
 * the sender splits 64 ints into 8 partitions, the receiver into 4 (only
 * the total must agree). Three activations, partitions marked one by one
 * in reverse order, by range and by list, with new data each time; the
 * receiver polls MPI_Parrived until the data is there, then checks it
 * before MPI_Wait. Then: four threads each marking two partitions of one
 * request at once; a receive into a strided datatype; an ordinary message
 * with the same tag on the same pair, which must not match the partitioned
 * one (nor it the ordinary receive); MPI_Startall and MPI_Waitall over
 * both sides; zero partitions. Bad input: MPI_ANY_SOURCE, MPI_ANY_TAG, a
 * negative partition count, MPI_Pready on an inactive request, twice on
 * one partition or past the last, MPI_Pready on a receive and
 * MPI_Parrived on a send, MPI_Parrived on an inactive request (true). */
#include "check.h"
#include <pthread.h>
#include <string.h>

#define N 64

struct marker { MPI_Request req; int first; };

static void *mark_two(void *arg) {
    struct marker *m = arg;
    OK(MPI_Pready(m->first, m->req));
    OK(MPI_Pready(m->first + 1, m->req));
    return NULL;
}

static void wait_arrived(MPI_Request r, int parts) {
    for (int p = parts - 1; p >= 0; p--) {
        int flag = 0;
        while (!flag) OK(MPI_Parrived(r, p, &flag));
    }
}

int main(int argc, char **argv) {
    int provided;
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    TRUE(provided == MPI_THREAD_MULTIPLE);
    MPI_Comm_rank(MPI_COMM_WORLD, &check_rank);
    int rank = check_rank, size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));

    int out[N], in[N];
    MPI_Request s, r;
    OK(MPI_Psend_init(out, 8, N / 8, MPI_INT, next, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    OK(MPI_Precv_init(in, 4, N / 4, MPI_INT, prev, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &r));

    /* Inactive: MPI_Pready refused, MPI_Parrived true. */
    ERR(MPI_ERR_REQUEST, MPI_Pready(0, s));
    int flag = 0;
    OK(MPI_Parrived(r, 0, &flag));
    EQ(flag, 1);

    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) { out[i] = 1000 * rank + 10 * i + round; in[i] = -1; }
        OK(MPI_Start(&r));
        OK(MPI_Start(&s));
        if (round == 0) {
            for (int p = 7; p >= 0; p--) OK(MPI_Pready(p, s));
            ERR(MPI_ERR_ARG, MPI_Pready(3, s));     /* marked already */
        } else if (round == 1) {
            ERR(MPI_ERR_ARG, MPI_Pready(8, s));     /* past the last */
            ERR(MPI_ERR_ARG, MPI_Pready(-1, s));
            OK(MPI_Pready_range(0, 3, s));
            OK(MPI_Pready_range(4, 7, s));
        } else {
            int list[8] = {6, 1, 7, 0, 2, 5, 3, 4};
            OK(MPI_Pready_list(8, list, s));
        }
        wait_arrived(r, 4);
        for (int i = 0; i < N; i++) EQ(in[i], 1000 * prev + 10 * i + round);
        MPI_Status st;
        OK(MPI_Wait(&r, &st));
        EQ(st.MPI_SOURCE, prev);
        EQ(st.MPI_TAG, 7);
        int got;
        OK(MPI_Get_count(&st, MPI_INT, &got));
        EQ(got, N);
        OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
        TRUE(s != MPI_REQUEST_NULL && r != MPI_REQUEST_NULL);
    }
    ERR(MPI_ERR_REQUEST, MPI_Pready(0, r));
    ERR(MPI_ERR_REQUEST, MPI_Parrived(s, 0, &flag));
    ERR(MPI_ERR_ARG, MPI_Parrived(r, 4, &flag));

    /* Four threads mark the partitions of one request at once. */
    for (int i = 0; i < N; i++) { out[i] = -rank - 10 * i; in[i] = 0; }
    OK(MPI_Start(&r));
    OK(MPI_Start(&s));
    pthread_t t[4];
    struct marker m[4];
    for (int k = 0; k < 4; k++) {
        m[k].req = s;
        m[k].first = 2 * k;
        TRUE(pthread_create(&t[k], NULL, mark_two, &m[k]) == 0);
    }
    for (int k = 0; k < 4; k++) pthread_join(t[k], NULL);
    MPI_Request both[2] = {s, r};
    OK(MPI_Waitall(2, both, MPI_STATUSES_IGNORE));
    for (int i = 0; i < N; i++) EQ(in[i], -prev - 10 * i);
    OK(MPI_Request_free(&s));
    OK(MPI_Request_free(&r));
    EQ(s, MPI_REQUEST_NULL);

    /* A strided receive: every other int of a 128-int buffer, one
     * partition per half. */
    int wide[2 * N];
    MPI_Datatype half, every_other;
    OK(MPI_Type_vector(N / 2, 1, 2, MPI_INT, &half));
    OK(MPI_Type_create_resized(half, 0, N * sizeof(int), &every_other));
    OK(MPI_Type_free(&half));
    OK(MPI_Type_commit(&every_other));
    for (int i = 0; i < 2 * N; i++) wide[i] = -5;
    for (int i = 0; i < N; i++) out[i] = 7 * rank + i;
    OK(MPI_Precv_init(wide, 2, 1, every_other, prev, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    OK(MPI_Psend_init(out, 2, N / 2, MPI_INT, next, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    MPI_Request pair[2] = {r, s};
    OK(MPI_Startall(2, pair));
    OK(MPI_Pready(1, s));
    OK(MPI_Pready(0, s));
    OK(MPI_Waitall(2, pair, MPI_STATUSES_IGNORE));
    for (int i = 0; i < 2 * N; i++) EQ(wide[i], i % 2 ? -5 : 7 * prev + i / 2);
    OK(MPI_Request_free(&pair[0]));
    OK(MPI_Request_free(&pair[1]));
    OK(MPI_Type_free(&every_other));

    /* An ordinary message with the same tag on the same pair matches the
     * ordinary receive only, whichever is posted first. */
    int plain_out = 4242 + rank, plain_in = -1;
    MPI_Request plain_r, plain_s;
    OK(MPI_Irecv(&plain_in, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, &plain_r));
    OK(MPI_Psend_init(out, 1, N, MPI_INT, next, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    OK(MPI_Precv_init(in, 1, N, MPI_INT, prev, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    for (int i = 0; i < N; i++) { out[i] = 3 * rank + i; in[i] = -1; }
    OK(MPI_Start(&r));
    OK(MPI_Start(&s));
    OK(MPI_Pready(0, s));
    OK(MPI_Isend(&plain_out, 1, MPI_INT, next, 7, MPI_COMM_WORLD, &plain_s));
    MPI_Request all[4] = {plain_r, plain_s, r, s};
    OK(MPI_Waitall(4, all, MPI_STATUSES_IGNORE));
    EQ(plain_in, 4242 + prev);
    for (int i = 0; i < N; i++) EQ(in[i], 3 * prev + i);
    OK(MPI_Request_free(&all[2]));
    OK(MPI_Request_free(&all[3]));

    /* Zero partitions: the (empty) message leaves at the start. */
    OK(MPI_Psend_init(out, 0, 4, MPI_INT, next, 11, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    OK(MPI_Precv_init(in, 0, 4, MPI_INT, prev, 11, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    OK(MPI_Start(&r));
    OK(MPI_Start(&s));
    MPI_Status st;
    OK(MPI_Wait(&r, &st));
    int got = -1;
    OK(MPI_Get_count(&st, MPI_INT, &got));
    EQ(got, 0);
    OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
    OK(MPI_Request_free(&s));
    OK(MPI_Request_free(&r));

    /* Bad arguments. */
    ERR(MPI_ERR_RANK, MPI_Precv_init(in, 1, 1, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    ERR(MPI_ERR_RANK, MPI_Psend_init(out, 1, 1, MPI_INT, size, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    ERR(MPI_ERR_TAG, MPI_Precv_init(in, 1, 1, MPI_INT, prev, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    ERR(MPI_ERR_ARG, MPI_Psend_init(out, -1, 1, MPI_INT, next, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    ERR(MPI_ERR_COUNT, MPI_Psend_init(out, 1, -1, MPI_INT, next, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    MPI_Request plain;
    OK(MPI_Isend(&plain_out, 1, MPI_INT, rank, 3, MPI_COMM_WORLD, &plain));
    ERR(MPI_ERR_REQUEST, MPI_Pready(0, plain));
    OK(MPI_Recv(&plain_in, 1, MPI_INT, rank, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    OK(MPI_Wait(&plain, MPI_STATUS_IGNORE));

    check_done("partitioned");
    return 0;
}
