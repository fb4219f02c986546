/* MPI_THREAD_SERIALIZED: two threads take turns inside MPI (a mutex around
 * every call, never held while waiting), each on its own communicator:
 * the library's tables are reached without locks, the program's mutex
 * ordering the calls. */
#include "check.h"
#include <pthread.h>

#define THREADS 2
#define ROUNDS 200

static pthread_mutex_t mpi = PTHREAD_MUTEX_INITIALIZER;
static MPI_Comm comms[THREADS];
static int size, rank;

#define LOCKED(call) do { pthread_mutex_lock(&mpi); OK(call); pthread_mutex_unlock(&mpi); } while (0)

static void *worker(void *arg) {
    int t = (int)(long)arg, next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (int round = 0; round < ROUNDS; round++) {
        int out = rank * 1000 + round * 10 + t, in = -1, flag = 0;
        MPI_Request r[2];
        LOCKED(MPI_Irecv(&in, 1, MPI_INT, prev, round, comms[t], &r[0]));
        LOCKED(MPI_Isend(&out, 1, MPI_INT, next, round, comms[t], &r[1]));
        while (!flag) LOCKED(MPI_Testall(2, r, &flag, MPI_STATUSES_IGNORE));
        EQ(in, prev * 1000 + round * 10 + t);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided = -1;
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &check_rank);
    rank = check_rank;
    EQ(provided, MPI_THREAD_SERIALIZED);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int t = 0; t < THREADS; t++) OK(MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]));
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) TRUE(pthread_create(&th[t], NULL, worker, (void *)(long)t) == 0);
    for (int t = 0; t < THREADS; t++) TRUE(pthread_join(th[t], NULL) == 0);
    for (int t = 0; t < THREADS; t++) OK(MPI_Comm_free(&comms[t]));
    check_done("serialized");
    return 0;
}
