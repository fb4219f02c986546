/* Request completion: Wait/Test and their all/any/some forms,
 * MPI_REQUEST_NULL entries, MPI_STATUS(ES)_IGNORE, Request_free and
 * Request_get_status. */
#include "check.h"

#define K 6

/* The empty status (of null and inactive requests): its MPI_ERROR is
 * MPI_SUCCESS by definition (MPI 4.1 3.7.3), even from a call that
 * completes one request. Such a call leaves MPI_ERROR as the program had
 * it in any other status (3.2.5; the callers set UNTOUCHED first). */
#define UNTOUCHED (-7)
static void empty_status(MPI_Status *st) {
    int count = -1;
    EQ(st->MPI_SOURCE, MPI_ANY_SOURCE); EQ(st->MPI_TAG, MPI_ANY_TAG); EQ(st->MPI_ERROR, MPI_SUCCESS);
    OK(MPI_Get_count(st, MPI_INT, &count)); EQ(count, 0);
}

/* With several requests complete, Testany, Waitany and
 * Request_get_status_any report the lowest index (as MPICH and Open MPI
 * do; mpi4py's tests rely on it): synchronous sends to self complete in
 * the order their receives match them. */
static void any_reports_lowest_complete(void) {
    int me, data[3] = {10, 11, 12}, got = -1, index = -1, flag = -1;
    MPI_Request r[3];
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    for (int i = 0; i < 3; i++)
        OK(MPI_Issend(&data[i], 1, MPI_INT, me, 77, MPI_COMM_WORLD, &r[i]));
    for (int i = 0; i < 3; i++) {
        OK(MPI_Recv(&got, 1, MPI_INT, me, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        EQ(got, 10 + i);
    }
    /* Every send matched: all three complete (wait until they are). */
    do { OK(MPI_Request_get_status_all(3, r, &flag, MPI_STATUSES_IGNORE)); } while (!flag);
    OK(MPI_Request_get_status_any(3, r, &index, &flag, MPI_STATUS_IGNORE));
    EQ(flag, 1); EQ(index, 0);
    OK(MPI_Testany(3, r, &index, &flag, MPI_STATUS_IGNORE));
    EQ(flag, 1); EQ(index, 0);
    OK(MPI_Waitany(3, r, &index, MPI_STATUS_IGNORE));
    EQ(index, 1);
    OK(MPI_Testany(3, r, &index, &flag, MPI_STATUS_IGNORE));
    EQ(flag, 1); EQ(index, 2);
}

/* A truncated receive through each nonblocking completion call: MPI_Wait
 * and MPI_Test return the operation's error, MPI_Waitall and MPI_Testall
 * MPI_ERR_IN_STATUS with each entry's error in its status. On the world
 * the receives are raw requests (completed by their engine handles); on a
 * communicator in reverse order they are ferry requests: both paths. */
static void truncation_in_completions(MPI_Comm c) {
    int me, n, two[2] = {1, 2}, one = -1, fine = -1, flag = 0, rc;
    MPI_Request r[2];
    MPI_Status st[2];
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &n);
    int to = (me + 1) % n, from = (me + n - 1) % n;
    OK(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
    OK(MPI_Irecv(&one, 1, MPI_INT, from, 60, c, &r[0]));
    OK(MPI_Send(two, 2, MPI_INT, to, 60, c));
    st[0].MPI_ERROR = UNTOUCHED;
    ERR(MPI_ERR_TRUNCATE, MPI_Wait(&r[0], &st[0]));
    EQ(st[0].MPI_ERROR, UNTOUCHED); EQ(st[0].MPI_SOURCE, from);
    TRUE(r[0] == MPI_REQUEST_NULL);
    OK(MPI_Irecv(&one, 1, MPI_INT, from, 61, c, &r[0]));
    OK(MPI_Send(two, 2, MPI_INT, to, 61, c));
    do rc = MPI_Test(&r[0], &flag, &st[0]); while (rc == MPI_SUCCESS && !flag);
    MPI_Error_class(rc, &rc);
    EQ(rc, MPI_ERR_TRUNCATE); EQ(flag, 1); EQ(st[0].MPI_ERROR, UNTOUCHED);
    TRUE(r[0] == MPI_REQUEST_NULL);
    for (int all = 0; all < 2; all++) {
        OK(MPI_Irecv(&one, 1, MPI_INT, from, 62, c, &r[0]));
        OK(MPI_Irecv(&fine, 1, MPI_INT, from, 63, c, &r[1]));
        OK(MPI_Send(two, 2, MPI_INT, to, 62, c));
        OK(MPI_Send(&two[1], 1, MPI_INT, to, 63, c));
        if (all) {
            ERR(MPI_ERR_IN_STATUS, MPI_Waitall(2, r, st));
        } else {
            do rc = MPI_Testall(2, r, &flag, st); while (rc == MPI_SUCCESS && !flag);
            MPI_Error_class(rc, &rc);
            EQ(rc, MPI_ERR_IN_STATUS); EQ(flag, 1);
        }
        EQ(st[0].MPI_ERROR, MPI_ERR_TRUNCATE); EQ(st[1].MPI_ERROR, MPI_SUCCESS);
        EQ(st[1].MPI_SOURCE, from); EQ(st[1].MPI_TAG, 63); EQ(fine, 2);
        TRUE(r[0] == MPI_REQUEST_NULL && r[1] == MPI_REQUEST_NULL);
    }
    OK(MPI_Comm_set_errhandler(c, MPI_ERRORS_ARE_FATAL));
}

/* Requests on the world are named by their engine handles (no table
 * entry): every call that takes a request must treat them as any other.
 * Mixed with requests of a duplicate (table entries) in one array; a
 * pending one lent to Request_get_status, Cancel, Testany, Testsome and
 * Start stays pending; a stale copy is an error everywhere; freed, its
 * receive still completes in the background. */
static void world_requests_everywhere(void) {
    int me, n, flag = -1, index = -1, outcount = -1, idx[4];
    int in[4] = {-1, -1, -1, -1}, out[4] = {40, 41, 42, 43};
    MPI_Request r[4], kept;
    MPI_Status st, sts[4];
    MPI_Comm dup;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int to = (me + 1) % n, from = (me + n - 1) % n;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));

    /* Pending: looked at, tested, started, and still there afterwards. */
    OK(MPI_Irecv(&in[0], 1, MPI_INT, from, 90, MPI_COMM_WORLD, &r[0]));
    OK(MPI_Irecv(&in[1], 1, MPI_INT, from, 91, dup, &r[1]));
    OK(MPI_Irecv(&in[2], 1, MPI_INT, from, 92, MPI_COMM_WORLD, &r[2]));
    kept = r[0];
    OK(MPI_Request_get_status(r[0], &flag, &st)); EQ(flag, 0);
    OK(MPI_Test(&r[0], &flag, &st)); EQ(flag, 0); TRUE(r[0] == kept);
    OK(MPI_Testany(3, r, &index, &flag, &st)); EQ(flag, 0);
    OK(MPI_Testsome(3, r, &outcount, idx, sts)); EQ(outcount, 0);
    OK(MPI_Testall(3, r, &flag, sts)); EQ(flag, 0);
    ERR(MPI_ERR_REQUEST, MPI_Start(&r[0])); /* not persistent */
    TRUE(r[0] == kept);
    /* Listed twice: an error, and nothing lost (through the general path
     * too: Testany lends). */
    MPI_Request twice[2] = {r[0], r[0]};
    ERR(MPI_ERR_REQUEST, MPI_Waitall(2, twice, MPI_STATUSES_IGNORE));
    ERR(MPI_ERR_REQUEST, MPI_Testany(2, twice, &index, &flag, &st));
    TRUE(twice[0] == kept && twice[1] == kept);

    /* Now the messages (after every rank's checks of its pending ones);
     * the mixed array completes in any order. */
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Send(&out[2], 1, MPI_INT, to, 92, MPI_COMM_WORLD));
    OK(MPI_Send(&out[1], 1, MPI_INT, to, 91, dup));
    OK(MPI_Send(&out[0], 1, MPI_INT, to, 90, MPI_COMM_WORLD));
    int done = 0;
    while (done < 3) {
        OK(MPI_Waitsome(3, r, &outcount, idx, sts));
        for (int k = 0; k < outcount; k++) {
            TRUE(r[idx[k]] == MPI_REQUEST_NULL);
            EQ(sts[k].MPI_SOURCE, from); EQ(sts[k].MPI_TAG, 90 + idx[k]);
            EQ(in[idx[k]], 40 + idx[k]);
        }
        done += outcount;
    }
    /* The completed request's kept copy is stale for every call. */
    ERR(MPI_ERR_REQUEST, MPI_Wait(&kept, &st));
    ERR(MPI_ERR_REQUEST, MPI_Test(&kept, &flag, &st));
    ERR(MPI_ERR_REQUEST, MPI_Request_get_status(kept, &flag, &st));
    ERR(MPI_ERR_REQUEST, MPI_Cancel(&kept));
    ERR(MPI_ERR_REQUEST, MPI_Request_free(&kept));
    MPI_Request stale2[2] = {kept, MPI_REQUEST_NULL};
    ERR(MPI_ERR_REQUEST, MPI_Waitany(2, stale2, &index, &st));
    /* A request is not a communicator. */
    ERR(MPI_ERR_COMM, MPI_Send(&out[0], 1, MPI_INT, to, 0, (MPI_Comm)kept));

    /* Cancelled while pending. */
    OK(MPI_Irecv(&in[3], 1, MPI_INT, from, 93, MPI_COMM_WORLD, &r[3]));
    OK(MPI_Cancel(&r[3]));
    OK(MPI_Wait(&r[3], &st));
    OK(MPI_Test_cancelled(&st, &flag)); EQ(flag, 1);
    TRUE(r[3] == MPI_REQUEST_NULL);

    /* Freed while pending: the receive still lands (the message is not
     * left for a later receive). */
    in[3] = -1;
    OK(MPI_Irecv(&in[3], 1, MPI_INT, from, 94, MPI_COMM_WORLD, &r[3]));
    OK(MPI_Request_free(&r[3])); TRUE(r[3] == MPI_REQUEST_NULL);
    OK(MPI_Send(&out[3], 1, MPI_INT, to, 94, MPI_COMM_WORLD));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    /* Once the sender's barrier is passed, its message was delivered. */
    while (in[3] != 43) OK(MPI_Iprobe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &flag, &st));
    OK(MPI_Iprobe(from, 94, MPI_COMM_WORLD, &flag, &st)); EQ(flag, 0);

    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL));
    OK(MPI_Comm_free(&dup));
}

int main(int argc, char **argv) {
    check_init(&argc, &argv);
    any_reports_lowest_complete();
    world_requests_everywhere();
    int size, rank = check_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm reversed;
    OK(MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &reversed));
    truncation_in_completions(MPI_COMM_WORLD);
    truncation_in_completions(reversed);
    OK(MPI_Comm_free(&reversed));
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int out[K], in[K], idx[K], flag = -1, index = -1, outcount = -1;
    MPI_Request rr[K], sr[K];
    MPI_Status sts[K], st;

    /* Null requests: complete at once with the empty status. */
    MPI_Request nr = MPI_REQUEST_NULL;
    st.MPI_ERROR = UNTOUCHED;
    OK(MPI_Wait(&nr, &st)); empty_status(&st);
    st.MPI_ERROR = UNTOUCHED;
    OK(MPI_Test(&nr, &flag, &st)); EQ(flag, 1); empty_status(&st);
    st.MPI_ERROR = UNTOUCHED;
    OK(MPI_Request_get_status(nr, &flag, &st)); EQ(flag, 1); empty_status(&st);
    MPI_Request nulls[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    st.MPI_ERROR = UNTOUCHED;
    OK(MPI_Waitany(3, nulls, &index, &st)); EQ(index, MPI_UNDEFINED); empty_status(&st);
    OK(MPI_Testany(3, nulls, &index, &flag, &st)); EQ(flag, 1); EQ(index, MPI_UNDEFINED);
    OK(MPI_Waitsome(3, nulls, &outcount, idx, sts)); EQ(outcount, MPI_UNDEFINED);
    OK(MPI_Testsome(3, nulls, &outcount, idx, sts)); EQ(outcount, MPI_UNDEFINED);
    OK(MPI_Waitall(3, nulls, sts)); empty_status(&sts[2]);
    OK(MPI_Testall(3, nulls, &flag, MPI_STATUSES_IGNORE)); EQ(flag, 1);
    OK(MPI_Waitall(0, NULL, MPI_STATUSES_IGNORE));

    /* Waitall over receives and sends, with a null in the middle. */
    for (int i = 0; i < K; i++) { out[i] = rank * 10 + i; in[i] = -1; }
    for (int i = 0; i < K; i++) {
        if (i == 2) { rr[i] = MPI_REQUEST_NULL; in[i] = prev * 10 + 2; continue; }
        OK(MPI_Irecv(&in[i], 1, MPI_INT, prev, i, MPI_COMM_WORLD, &rr[i]));
    }
    for (int i = 0; i < K; i++) OK(MPI_Isend(&out[i], 1, MPI_INT, next, i, MPI_COMM_WORLD, &sr[i]));
    OK(MPI_Waitall(K, rr, sts));
    for (int i = 0; i < K; i++) {
        TRUE(rr[i] == MPI_REQUEST_NULL);
        EQ(in[i], prev * 10 + i);
        if (i != 2) { EQ(sts[i].MPI_SOURCE, prev); EQ(sts[i].MPI_TAG, i); }
    }
    empty_status(&sts[2]);
    OK(MPI_Waitall(K, sr, MPI_STATUSES_IGNORE));
    /* The tag 2 message had no receive in the array: take it now. */
    OK(MPI_Recv(&in[2], 1, MPI_INT, prev, 2, MPI_COMM_WORLD, &st));
    EQ(in[2], prev * 10 + 2);

    /* Testall: nothing changes until all are complete. */
    OK(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < 2; i++) OK(MPI_Irecv(&in[i], 1, MPI_INT, prev, 20 + i, MPI_COMM_WORLD, &rr[i]));
    OK(MPI_Testall(2, rr, &flag, sts)); EQ(flag, 0);
    TRUE(rr[0] != MPI_REQUEST_NULL && rr[1] != MPI_REQUEST_NULL);
    OK(MPI_Request_get_status(rr[0], &flag, &st)); EQ(flag, 0);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < 2; i++) OK(MPI_Send(&out[i], 1, MPI_INT, next, 20 + i, MPI_COMM_WORLD));
    do OK(MPI_Testall(2, rr, &flag, sts)); while (!flag);
    TRUE(rr[0] == MPI_REQUEST_NULL && rr[1] == MPI_REQUEST_NULL);
    EQ(sts[1].MPI_TAG, 21); EQ(in[1], prev * 10 + 1);

    /* Waitany / Testany: each completion once, then MPI_UNDEFINED. */
    for (int i = 0; i < K; i++) OK(MPI_Irecv(&in[i], 1, MPI_INT, prev, 30 + i, MPI_COMM_WORLD, &rr[i]));
    for (int i = K - 1; i >= 0; i--) OK(MPI_Send(&out[i], 1, MPI_INT, next, 30 + i, MPI_COMM_WORLD));
    int seen = 0;
    for (int k = 0; k < K; k++) {
        if (k % 2) {
            OK(MPI_Waitany(K, rr, &index, &st));
        } else {
            do OK(MPI_Testany(K, rr, &index, &flag, &st)); while (!flag);
        }
        TRUE(index >= 0 && index < K);
        TRUE(rr[index] == MPI_REQUEST_NULL);
        EQ(st.MPI_TAG, 30 + index); EQ(in[index], prev * 10 + index);
        seen |= 1 << index;
    }
    EQ(seen, (1 << K) - 1);
    OK(MPI_Waitany(K, rr, &index, MPI_STATUS_IGNORE)); EQ(index, MPI_UNDEFINED);

    /* Waitsome / Testsome. */
    for (int i = 0; i < K; i++) OK(MPI_Irecv(&in[i], 1, MPI_INT, prev, 40 + i, MPI_COMM_WORLD, &rr[i]));
    OK(MPI_Testsome(K, rr, &outcount, idx, sts)); TRUE(outcount >= 0);
    int done = outcount;
    OK(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < K; i++) OK(MPI_Send(&out[i], 1, MPI_INT, next, 40 + i, MPI_COMM_WORLD));
    int rounds = 0;
    while (done < K) {
        if (rounds++ % 2) OK(MPI_Waitsome(K, rr, &outcount, idx, sts));
        else OK(MPI_Testsome(K, rr, &outcount, idx, MPI_STATUSES_IGNORE));
        TRUE(outcount != MPI_UNDEFINED);
        for (int k = 0; k < outcount; k++) {
            TRUE(rr[idx[k]] == MPI_REQUEST_NULL);
            EQ(in[idx[k]], prev * 10 + idx[k]);
        }
        done += outcount;
    }
    EQ(done, K);
    OK(MPI_Waitsome(K, rr, &outcount, idx, sts)); EQ(outcount, MPI_UNDEFINED);

    /* Request_get_status leaves the request; Request_free lets it finish. */
    OK(MPI_Irecv(&in[0], 1, MPI_INT, prev, 50, MPI_COMM_WORLD, &rr[0]));
    OK(MPI_Isend(&out[0], 1, MPI_INT, next, 50, MPI_COMM_WORLD, &sr[0]));
    do OK(MPI_Request_get_status(rr[0], &flag, &st)); while (!flag);
    EQ(st.MPI_TAG, 50); TRUE(rr[0] != MPI_REQUEST_NULL);
    OK(MPI_Test(&rr[0], &flag, &st)); EQ(flag, 1); TRUE(rr[0] == MPI_REQUEST_NULL);
    OK(MPI_Request_free(&sr[0])); TRUE(sr[0] == MPI_REQUEST_NULL);

    /* A request handle listed twice is an error, and nothing is lost. */
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    OK(MPI_Irecv(&in[0], 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &rr[0]));
    rr[1] = rr[0];
    ERR(MPI_ERR_REQUEST, MPI_Waitall(2, rr, MPI_STATUSES_IGNORE));
    OK(MPI_Wait(&rr[0], MPI_STATUS_IGNORE));

    check_done("requests");
    return 0;
}
