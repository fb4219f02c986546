/* ferry's MPIX extensions: MPIX_REQUEST_EMPTY (sends and single-member
 * collectives; receives only with mpi_recv_req_may_be_empty), ARecv
 * (MPIX_Arecv, MPIX_Iarecv, MPIX_Status_get_buffer, MPI_Free_mem), and the
 * wait mode (MPIX_Set_wait_mode before MPI_Init, MPIX_Get_wait_mode). */
#include "check.h"
#include <string.h>

int main(int argc, char **argv) {
    int mode = -1;
    OK(MPIX_Get_wait_mode(&mode));
    TRUE(mode == MPIX_WAIT_SPIN || mode == MPIX_WAIT_PASSIVE || mode == MPIX_WAIT_HYBRID);
    OK(MPIX_Set_wait_mode(MPIX_WAIT_PASSIVE));
    OK(MPIX_Get_wait_mode(&mode)); EQ(mode, MPIX_WAIT_PASSIVE);
    check_init(&argc, &argv);
    int size, rank = check_rank, flag = -1, idx = -1, count = -1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Status st;
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    OK(MPIX_Get_wait_mode(&mode)); EQ(mode, MPIX_WAIT_PASSIVE);
    ERR(MPI_ERR_OTHER, MPIX_Set_wait_mode(MPIX_WAIT_SPIN));

    /* A single-member collective completes in its call: MPIX_REQUEST_EMPTY,
     * taken by every completion call. */
    MPI_Request r, rs[3];
    OK(MPI_Ibarrier(MPI_COMM_SELF, &r)); TRUE(r == MPIX_REQUEST_EMPTY);
    OK(MPI_Wait(&r, &st)); TRUE(r == MPI_REQUEST_NULL); EQ(st.MPI_SOURCE, MPI_ANY_SOURCE);
    OK(MPI_Ibarrier(MPI_COMM_SELF, &r));
    OK(MPI_Request_get_status(r, &flag, MPI_STATUS_IGNORE)); EQ(flag, 1); TRUE(r == MPIX_REQUEST_EMPTY);
    OK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE)); EQ(flag, 1); TRUE(r == MPI_REQUEST_NULL);
    OK(MPI_Ibarrier(MPI_COMM_SELF, &r)); OK(MPI_Cancel(&r)); OK(MPI_Request_free(&r)); TRUE(r == MPI_REQUEST_NULL);
    OK(MPI_Ibarrier(MPI_COMM_SELF, &r));
    ERR(MPI_ERR_REQUEST, MPI_Start(&r)); /* not persistent */
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    int x = 5, y = 0;
    OK(MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF, &rs[0]));
    TRUE(rs[0] == MPIX_REQUEST_EMPTY); EQ(y, 5); /* the result is there already */
    rs[1] = MPI_REQUEST_NULL;
    OK(MPI_Ibarrier(MPI_COMM_SELF, &rs[2]));
    OK(MPI_Waitany(3, rs, &idx, &st)); TRUE(idx == 0 || idx == 2); TRUE(rs[idx] == MPI_REQUEST_NULL);
    int outc = -1, ids[3];
    OK(MPI_Testsome(3, rs, &outc, ids, MPI_STATUSES_IGNORE)); EQ(outc, 1);
    OK(MPI_Waitall(3, rs, MPI_STATUSES_IGNORE));
    for (int i = 0; i < 3; i++) TRUE(rs[i] == MPI_REQUEST_NULL);

    /* Sends may complete in their call; either way the handle completes. */
    int out[4] = {rank, rank + 1, rank + 2, rank + 3}, in[4];
    OK(MPI_Isend(out, 4, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r));
    TRUE(r == MPIX_REQUEST_EMPTY);
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));

    /* Receives: EMPTY only where the communicator opted in. */
    MPI_Info info;
    MPI_Comm optin;
    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "mpi_recv_req_may_be_empty", "true"));
    OK(MPI_Comm_dup_with_info(MPI_COMM_SELF, info, &optin));
    OK(MPI_Info_free(&info));
    OK(MPI_Send(out, 4, MPI_INT, 0, 1, optin));
    OK(MPI_Iprobe(0, 1, optin, &flag, MPI_STATUS_IGNORE)); EQ(flag, 1);
    memset(in, 0, sizeof in);
    OK(MPI_Irecv(in, 4, MPI_INT, 0, 1, optin, &r));
    TRUE(r == MPIX_REQUEST_EMPTY); EQ(in[3], rank + 3);
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    OK(MPI_Send(out, 4, MPI_INT, 0, 2, MPI_COMM_SELF));
    OK(MPI_Iprobe(0, 2, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE)); EQ(flag, 1);
    OK(MPI_Irecv(in, 4, MPI_INT, 0, 2, MPI_COMM_SELF, &r));
    TRUE(r != MPIX_REQUEST_EMPTY && r != MPI_REQUEST_NULL); /* not opted in */
    OK(MPI_Wait(&r, &st)); EQ(st.MPI_TAG, 2);
    OK(MPI_Comm_free(&optin));

    /* ARecv around the ring: sizes the receiver does not know. */
    for (int round = 0; round < 3; round++) {
        int n = (rank + 1) * 1000 * (round + 1) + round, pn = (prev + 1) * 1000 * (round + 1) + round;
        if (round == 2) { n = 0; pn = 0; }
        int *msg = malloc((n + 1) * sizeof(int));
        for (int i = 0; i < n; i++) msg[i] = rank * 7 + i;
        MPI_Request sr;
        OK(MPI_Isend(msg, n, MPI_INT, next, 10 + round, MPI_COMM_WORLD, &sr));
        void *buf = (void *)1;
        if (round == 1) {
            OK(MPIX_Iarecv(prev, 10 + round, MPI_COMM_WORLD, &r));
            OK(MPI_Wait(&r, &st));
        } else {
            OK(MPIX_Arecv(MPI_ANY_SOURCE, 10 + round, MPI_COMM_WORLD, &st));
        }
        EQ(st.MPI_SOURCE, prev);
        OK(MPI_Get_count(&st, MPI_INT, &count)); EQ(count, pn);
        OK(MPIX_Status_get_buffer(&st, &buf));
        if (pn == 0) TRUE(buf == NULL);
        else {
            int *got = buf;
            for (int i = 0; i < pn; i++) if (got[i] != prev * 7 + i) FAIL("round %d: got[%d] = %d", round, i, got[i]);
            got[0] = -1; /* the program owns it */
        }
        OK(MPI_Free_mem(buf));
        OK(MPI_Wait(&sr, MPI_STATUS_IGNORE));
        free(msg);
    }
    /* An ARecv whose status is ignored frees its buffer; MPIX_Arecv needs one. */
    OK(MPI_Send(out, 4, MPI_INT, next, 20, MPI_COMM_WORLD));
    OK(MPIX_Iarecv(prev, 20, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    ERR(MPI_ERR_ARG, MPIX_Arecv(prev, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    /* A status of another operation has no buffer; MPI_Alloc_mem still works. */
    void *b = (void *)1;
    OK(MPIX_Status_get_buffer(&st, &b)); /* from the last ARecv: freed, but the address stays */
    MPI_Status plain;
    OK(MPI_Sendrecv(out, 1, MPI_INT, next, 22, in, 1, MPI_INT, prev, 22, MPI_COMM_WORLD, &plain));
    OK(MPIX_Status_get_buffer(&plain, &b)); TRUE(b == NULL);
    OK(MPI_Alloc_mem(64, MPI_INFO_NULL, &b)); memset(b, 1, 64); OK(MPI_Free_mem(b));

    check_done("mpix");
    return 0;
}
