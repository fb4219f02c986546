/* Generalized requests: MPI_Grequest_start / MPI_Grequest_complete, and
 * when the query, free and cancel callbacks run (Test, Wait, Waitany,
 * Testall, Request_get_status, Request_free before and after completion,
 * Cancel); a callback's error is the call's; completion from another
 * thread while the main thread waits (MPI_THREAD_MULTIPLE). */
#include "check.h"
#include <pthread.h>
#include <time.h>

struct calls {
    int query, free, cancel, cancel_complete, query_rc;
};

static int query_fn(void *extra, MPI_Status *status) {
    struct calls *c = extra;
    c->query++;
    status->MPI_SOURCE = 42;
    status->MPI_TAG = 7;
    MPI_Status_set_elements(status, MPI_INT, 3);
    MPI_Status_set_cancelled(status, 0);
    return c->query_rc;
}

static int free_fn(void *extra) {
    ((struct calls *)extra)->free++;
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete) {
    struct calls *c = extra;
    c->cancel++;
    c->cancel_complete = complete;
    return MPI_SUCCESS;
}

static MPI_Request later;

static void *complete_later(void *arg) {
    (void)arg;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    OK(MPI_Grequest_complete(later));
    return NULL;
}

static void calls_are(const struct calls *c, int query, int free_, int cancel) {
    EQ(c->query, query); EQ(c->free, free_); EQ(c->cancel, cancel);
}

int main(int argc, char **argv) {
    int provided;
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &check_rank);
    EQ(provided, MPI_THREAD_MULTIPLE);
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_Request req, reqs[2];
    MPI_Status st;
    int flag, count;

    /* Test before and after completion; the status is query_fn's. */
    struct calls a = {0};
    OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &a, &req));
    OK(MPI_Test(&req, &flag, &st));
    EQ(flag, 0); calls_are(&a, 0, 0, 0);
    OK(MPI_Request_get_status(req, &flag, &st));
    EQ(flag, 0);
    OK(MPI_Grequest_complete(req));
    calls_are(&a, 0, 0, 0);
    OK(MPI_Request_get_status(req, &flag, &st));
    EQ(flag, 1); EQ(st.MPI_SOURCE, 42);
    calls_are(&a, 1, 0, 0);
    OK(MPI_Test(&req, &flag, &st));
    EQ(flag, 1); TRUE(req == MPI_REQUEST_NULL);
    calls_are(&a, 2, 1, 0);
    EQ(st.MPI_SOURCE, 42); EQ(st.MPI_TAG, 7);
    OK(MPI_Get_count(&st, MPI_INT, &count)); EQ(count, 3);

    /* Cancel before and after completion, then Wait. */
    struct calls b = {0};
    OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &b, &req));
    OK(MPI_Cancel(&req));
    calls_are(&b, 0, 0, 1); EQ(b.cancel_complete, 0);
    OK(MPI_Grequest_complete(req));
    OK(MPI_Cancel(&req));
    calls_are(&b, 0, 0, 2); EQ(b.cancel_complete, 1);
    OK(MPI_Wait(&req, &st));
    calls_are(&b, 1, 1, 2);
    TRUE(req == MPI_REQUEST_NULL);
    /* Completing it again: it is gone. */
    ERR(MPI_ERR_REQUEST, MPI_Grequest_complete(req));

    /* Request_free before completion: free_fn runs at completion, no
     * query_fn; after completion: at once. */
    struct calls c = {0};
    OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &c, &req));
    MPI_Request keep = req;
    OK(MPI_Request_free(&req));
    TRUE(req == MPI_REQUEST_NULL);
    calls_are(&c, 0, 0, 0);
    OK(MPI_Grequest_complete(keep));
    calls_are(&c, 0, 1, 0);
    struct calls d = {0};
    OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &d, &req));
    OK(MPI_Grequest_complete(req));
    OK(MPI_Request_free(&req));
    calls_are(&d, 0, 1, 0);

    /* Waitany picks the complete one; Testall with a self message. */
    struct calls e = {0}, f = {0};
    OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &e, &reqs[0]));
    OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &f, &reqs[1]));
    OK(MPI_Grequest_complete(reqs[1]));
    int idx;
    OK(MPI_Waitany(2, reqs, &idx, &st));
    EQ(idx, 1); EQ(st.MPI_TAG, 7);
    calls_are(&f, 1, 1, 0); calls_are(&e, 0, 0, 0);
    int x = 5, y = 0;
    OK(MPI_Irecv(&y, 1, MPI_INT, 0, 1, MPI_COMM_SELF, &reqs[1]));
    OK(MPI_Send(&x, 1, MPI_INT, 0, 1, MPI_COMM_SELF));
    MPI_Status sts[2];
    OK(MPI_Testall(2, reqs, &flag, sts));
    EQ(flag, 0); calls_are(&e, 0, 0, 0);
    OK(MPI_Grequest_complete(reqs[0]));
    flag = 0;
    while (!flag) OK(MPI_Testall(2, reqs, &flag, sts));
    calls_are(&e, 1, 1, 0);
    EQ(sts[0].MPI_SOURCE, 42); EQ(sts[1].MPI_SOURCE, 0); EQ(y, 5);

    /* A failing query_fn: Wait returns its error; free_fn still runs. */
    struct calls g = {0};
    g.query_rc = MPI_ERR_OTHER;
    OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &g, &req));
    OK(MPI_Grequest_complete(req));
    ERR(MPI_ERR_OTHER, MPI_Wait(&req, &st));
    calls_are(&g, 1, 1, 0);

    /* Null callbacks, completed by another thread while Wait blocks. */
    OK(MPI_Grequest_start(NULL, NULL, NULL, NULL, &later));
    pthread_t t;
    TRUE(pthread_create(&t, NULL, complete_later, NULL) == 0);
    OK(MPI_Wait(&later, &st));
    TRUE(later == MPI_REQUEST_NULL);
    EQ(st.MPI_SOURCE, MPI_ANY_SOURCE);
    pthread_join(t, NULL);

    check_done("grequest");
    return 0;
}
