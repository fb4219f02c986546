/* MPI_THREAD_MULTIPLE: several threads at once, each on its own
 * communicator, posting, testing and completing requests (Isend/Irecv,
 * Wait, Test, Waitall, Waitany, Request_get_status) on the shared tables;
 * MPI_Is_thread_main from the other threads. */
#include "check.h"
#include <pthread.h>

#define THREADS 4
#define ROUNDS 300
#define K 4

static int size, rank, next, prev;
static MPI_Comm comms[THREADS];
static int thread_main_flags[THREADS];

static void *worker(void *arg) {
    int t = (int)(long)arg;
    MPI_Comm c = comms[t];
    int out[K], in[K];
    MPI_Request r[2 * K];
    MPI_Status st[2 * K];
    OK(MPI_Is_thread_main(&thread_main_flags[t]));
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < K; i++) {
            out[i] = (rank * THREADS + t) * 100000 + round * 10 + i;
            in[i] = -1;
            OK(MPI_Irecv(&in[i], 1, MPI_INT, prev, i, c, &r[i]));
        }
        for (int i = 0; i < K; i++) OK(MPI_Isend(&out[i], 1, MPI_INT, next, i, c, &r[K + i]));
        switch (round % 4) {
        case 0: OK(MPI_Waitall(2 * K, r, st)); break;
        case 1:
            for (int i = 0; i < 2 * K; i++) OK(MPI_Wait(&r[i], &st[i]));
            break;
        case 2:
            for (int i = 0; i < 2 * K; i++) {
                int flag = 0;
                while (!flag) OK(MPI_Test(&r[i], &flag, &st[i]));
            }
            break;
        case 3:
            for (int k = 0; k < 2 * K; k++) {
                int idx = -1, flag = 0;
                MPI_Status s;
                do OK(MPI_Request_get_status(r[k], &flag, &s)); while (!flag);
                OK(MPI_Waitany(2 * K, r, &idx, &s));
                TRUE(idx >= 0 && idx < 2 * K);
                if (idx < K) st[idx] = s;
            }
            break;
        }
        for (int i = 0; i < 2 * K; i++) TRUE(r[i] == MPI_REQUEST_NULL);
        for (int i = 0; i < K; i++) {
            int want = (prev * THREADS + t) * 100000 + round * 10 + i;
            if (in[i] != want) FAIL("thread %d round %d: in[%d] = %d, expected %d", t, round, i, in[i], want);
            EQ(st[i].MPI_SOURCE, prev); EQ(st[i].MPI_TAG, i);
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided = -1;
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &check_rank);
    rank = check_rank;
    EQ(provided, MPI_THREAD_MULTIPLE);
    OK(MPI_Query_thread(&provided)); EQ(provided, MPI_THREAD_MULTIPLE);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    next = (rank + 1) % size; prev = (rank + size - 1) % size;
    for (int t = 0; t < THREADS; t++) OK(MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]));
    int is_main = 0;
    OK(MPI_Is_thread_main(&is_main)); EQ(is_main, 1);

    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) TRUE(pthread_create(&th[t], NULL, worker, (void *)(long)t) == 0);
    for (int t = 0; t < THREADS; t++) TRUE(pthread_join(th[t], NULL) == 0);
    for (int t = 0; t < THREADS; t++) EQ(thread_main_flags[t], 0);
    for (int t = 0; t < THREADS; t++) OK(MPI_Comm_free(&comms[t]));

    check_done("threads");
    return 0;
}
