/* MPI_THREAD_FUNNELED: another thread's MPI call on a table of the library
 * is refused with MPI_ERR_OTHER (never a race on the lock-free tables),
 * while the main thread goes on. */
#include "check.h"
#include <pthread.h>

static MPI_Comm dup;
static int thread_class = -1, thread_class_world = -1;

static void *intruder(void *arg) {
    (void)arg;
    int x = 1, c = -1;
    MPI_Request r;
    int rc = MPI_Isend(&x, 1, MPI_INT, MPI_PROC_NULL, 0, dup, &r);
    MPI_Error_class(rc, &c);
    thread_class = c;
    rc = MPI_Irecv(&x, 1, MPI_INT, 0, 0, MPI_COMM_SELF, &r);
    MPI_Error_class(rc, &c);
    thread_class_world = c;
    return NULL;
}

int main(int argc, char **argv) {
    int provided = -1, is_main = -1;
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &check_rank);
    EQ(provided, MPI_THREAD_FUNNELED);
    OK(MPI_Is_thread_main(&is_main)); EQ(is_main, 1);
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    OK(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    pthread_t th;
    TRUE(pthread_create(&th, NULL, intruder, NULL) == 0);
    TRUE(pthread_join(th, NULL) == 0);
    EQ(thread_class, MPI_ERR_OTHER);
    EQ(thread_class_world, MPI_ERR_OTHER);
    /* The main thread is unaffected. */
    int v = 1, s = 0, size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    OK(MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, dup)); EQ(s, size);
    OK(MPI_Comm_free(&dup));
    check_done("funneled");
    return 0;
}
