/* Point-to-point beyond the basic modes: persistent requests (every send
 * mode, receive, Start/Startall, reuse, inactive handles), buffered mode
 * (attach/detach, Bsend/Ibsend/Bsend_init, MPI_ERR_BUFFER accounting,
 * MPI_BUFFER_AUTOMATIC), matched probe (Mprobe/Improbe/Mrecv/Imrecv,
 * MPI_MESSAGE_NO_PROC), Cancel/Test_cancelled, Get_elements and the status
 * setters. Works on any number of ranks (1: the ring is self). */
#include "check.h"
#include <string.h>

#define N 64

int main(int argc, char **argv) {
    check_init(&argc, &argv);
    int size, rank = check_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int out[N], in[N], count = -1, flag = -1;
    MPI_Status st;
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));

    /* Persistent: each send mode against a persistent receive, 5 rounds,
     * the buffers refilled between starts. */
    for (int mode = 0; mode < 4; mode++) {
        MPI_Request r[2];
        OK(MPI_Recv_init(in, N, MPI_INT, prev, 100 + mode, MPI_COMM_WORLD, &r[0]));
        switch (mode) {
        case 0: OK(MPI_Send_init(out, N, MPI_INT, next, 100 + mode, MPI_COMM_WORLD, &r[1])); break;
        case 1: OK(MPI_Ssend_init(out, N, MPI_INT, next, 100 + mode, MPI_COMM_WORLD, &r[1])); break;
        case 2: OK(MPI_Rsend_init(out, N, MPI_INT, next, 100 + mode, MPI_COMM_WORLD, &r[1])); break;
        case 3: {
            static char bbuf[N * sizeof(int) + MPI_BSEND_OVERHEAD];
            OK(MPI_Buffer_attach(bbuf, sizeof bbuf));
            OK(MPI_Bsend_init(out, N, MPI_INT, next, 100 + mode, MPI_COMM_WORLD, &r[1]));
            break;
        }
        }
        /* Inactive: completion calls see them as null, handles stay. */
        OK(MPI_Wait(&r[0], &st)); TRUE(r[0] != MPI_REQUEST_NULL);
        EQ(st.MPI_SOURCE, MPI_ANY_SOURCE); EQ(st.MPI_TAG, MPI_ANY_TAG);
        OK(MPI_Test(&r[1], &flag, MPI_STATUS_IGNORE)); EQ(flag, 1); TRUE(r[1] != MPI_REQUEST_NULL);
        int idx = -2;
        OK(MPI_Waitany(2, r, &idx, &st)); EQ(idx, MPI_UNDEFINED);
        for (int round = 0; round < 5; round++) {
            for (int i = 0; i < N; i++) { out[i] = rank * 1000 + round * 100 + i; in[i] = -1; }
            OK(MPI_Start(&r[0]));
            ERR(MPI_ERR_REQUEST, MPI_Start(&r[0])); /* already active */
            OK(MPI_Barrier(MPI_COMM_WORLD));        /* receives posted: ready mode is legal */
            OK(MPI_Start(&r[1]));
            if (round % 2) OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
            else { OK(MPI_Wait(&r[1], MPI_STATUS_IGNORE)); OK(MPI_Wait(&r[0], &st)); EQ(st.MPI_SOURCE, prev); }
            TRUE(r[0] != MPI_REQUEST_NULL && r[1] != MPI_REQUEST_NULL);
            for (int i = 0; i < N; i++) if (in[i] != prev * 1000 + round * 100 + i) FAIL("mode %d round %d in[%d] = %d", mode, round, i, in[i]);
        }
        /* Startall, then free. */
        OK(MPI_Startall(1, &r[0]));
        OK(MPI_Barrier(MPI_COMM_WORLD));
        OK(MPI_Startall(1, &r[1]));
        OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
        OK(MPI_Request_free(&r[0])); OK(MPI_Request_free(&r[1]));
        TRUE(r[0] == MPI_REQUEST_NULL);
        if (mode == 3) { void *b; int sz; OK(MPI_Buffer_detach(&b, &sz)); EQ(sz, N * sizeof(int) + MPI_BSEND_OVERHEAD); }
        OK(MPI_Barrier(MPI_COMM_WORLD));
    }
    /* A non-persistent request cannot be started. */
    {
        MPI_Request r;
        OK(MPI_Irecv(in, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r));
        ERR(MPI_ERR_REQUEST, MPI_Start(&r));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    }

    /* Buffered: no buffer -> MPI_ERR_BUFFER; accounting of the overhead. */
    ERR(MPI_ERR_BUFFER, MPI_Bsend(out, 1, MPI_INT, next, 200, MPI_COMM_WORLD));
    {
        int bsize = 2 * (N * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
        char *bbuf = malloc(bsize);
        OK(MPI_Buffer_attach(bbuf, bsize));
        ERR(MPI_ERR_BUFFER, MPI_Buffer_attach(bbuf, bsize)); /* already attached */
        /* Too big for the whole buffer once the overhead counts. */
        int *huge = calloc(bsize, 1);
        ERR(MPI_ERR_BUFFER, MPI_Bsend(huge, bsize / (int)sizeof(int), MPI_INT, next, 201, MPI_COMM_WORLD));
        for (int i = 0; i < N; i++) out[i] = rank * 7 + i;
        MPI_Request r;
        OK(MPI_Bsend(out, N, MPI_INT, next, 202, MPI_COMM_WORLD));
        OK(MPI_Ibsend(out, N, MPI_INT, next, 203, MPI_COMM_WORLD, &r));
        out[0] = -99; /* buffered: the program may reuse its buffer at once */
        OK(MPI_Wait(&r, &st)); TRUE(r == MPI_REQUEST_NULL);
        OK(MPI_Recv(in, N, MPI_INT, prev, 202, MPI_COMM_WORLD, &st));
        EQ(in[0], prev * 7); EQ(in[N - 1], prev * 7 + N - 1);
        OK(MPI_Recv(in, N, MPI_INT, prev, 203, MPI_COMM_WORLD, &st));
        EQ(in[0], prev * 7);
        void *back = NULL; int bs = -1;
        OK(MPI_Buffer_detach(&back, &bs));
        TRUE(back == bbuf); EQ(bs, bsize);
        OK(MPI_Buffer_detach(&back, &bs)); TRUE(back == NULL); EQ(bs, 0);
        /* A large (rendezvous) message stays in the buffer until received:
         * a second one finds no room. */
        int big = 1 << 18;
        int *large = malloc(big * sizeof(int)), *got = malloc(big * sizeof(int));
        for (int i = 0; i < big; i++) large[i] = rank + i;
        int lsize = big * (int)sizeof(int) + MPI_BSEND_OVERHEAD;
        char *lbuf = malloc(lsize);
        OK(MPI_Buffer_attach(lbuf, lsize));
        OK(MPI_Bsend(large, big, MPI_INT, next, 206, MPI_COMM_WORLD));
        large[0] = -1;
        ERR(MPI_ERR_BUFFER, MPI_Bsend(large, big, MPI_INT, next, 207, MPI_COMM_WORLD));
        OK(MPI_Barrier(MPI_COMM_WORLD)); /* nobody receives before every check */
        OK(MPI_Recv(got, big, MPI_INT, prev, 206, MPI_COMM_WORLD, &st));
        EQ(got[0], prev); EQ(got[big - 1], prev + big - 1);
        OK(MPI_Buffer_detach(&back, &bs)); TRUE(back == lbuf);
        free(large); free(got); free(lbuf);
        /* Automatic buffering: any size goes. */
        OK(MPI_Buffer_attach(MPI_BUFFER_AUTOMATIC, 0));
        OK(MPI_Bsend(huge, bsize / (int)sizeof(int), MPI_INT, next, 205, MPI_COMM_WORLD));
        OK(MPI_Recv(huge, bsize / (int)sizeof(int), MPI_INT, prev, 205, MPI_COMM_WORLD, &st));
        OK(MPI_Get_count(&st, MPI_INT, &count)); EQ(count, bsize / (int)sizeof(int));
        OK(MPI_Buffer_detach(&back, &bs)); TRUE(back == MPI_BUFFER_AUTOMATIC);
        free(huge); free(bbuf);
    }

    /* Matched probe. */
    OK(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < N; i++) out[i] = rank + i;
    OK(MPI_Send(out, N, MPI_INT, next, 300, MPI_COMM_WORLD));
    OK(MPI_Send(out, 3, MPI_INT, next, 301, MPI_COMM_WORLD));
    {
        MPI_Message m = MPI_MESSAGE_NULL, m2;
        OK(MPI_Mprobe(prev, 300, MPI_COMM_WORLD, &m, &st));
        TRUE(m != MPI_MESSAGE_NULL && m != MPI_MESSAGE_NO_PROC);
        OK(MPI_Get_count(&st, MPI_INT, &count)); EQ(count, N); EQ(st.MPI_SOURCE, prev);
        /* Matched: no longer visible to probes. */
        OK(MPI_Iprobe(prev, 300, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE)); EQ(flag, 0);
        memset(in, 0, sizeof in);
        OK(MPI_Mrecv(in, N, MPI_INT, &m, &st));
        TRUE(m == MPI_MESSAGE_NULL); EQ(in[N - 1], prev + N - 1); EQ(st.MPI_TAG, 300);
        do OK(MPI_Improbe(MPI_ANY_SOURCE, 301, MPI_COMM_WORLD, &flag, &m2, &st)); while (!flag);
        MPI_Request r;
        OK(MPI_Imrecv(in, N, MPI_INT, &m2, &r)); TRUE(m2 == MPI_MESSAGE_NULL);
        OK(MPI_Wait(&r, &st));
        OK(MPI_Get_count(&st, MPI_INT, &count)); EQ(count, 3); EQ(in[2], prev + 2);
        /* A truncated Mrecv reports MPI_ERR_TRUNCATE with the status. */
        OK(MPI_Send(out, 5, MPI_INT, next, 302, MPI_COMM_WORLD));
        st.MPI_ERROR = -1;
        OK(MPI_Mprobe(prev, 302, MPI_COMM_WORLD, &m, &st));
        ERR(MPI_ERR_TRUNCATE, MPI_Mrecv(in, 2, MPI_INT, &m, &st));
        /* Single completions leave MPI_ERROR as it was (MPI 4.1 3.2.5). */
        EQ(st.MPI_ERROR, -1); EQ(st.MPI_SOURCE, prev);
        /* PROC_NULL: MPI_MESSAGE_NO_PROC, received at once. */
        OK(MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &m, &st));
        TRUE(m == MPI_MESSAGE_NO_PROC);
        OK(MPI_Mrecv(in, N, MPI_INT, &m, &st));
        TRUE(m == MPI_MESSAGE_NULL); EQ(st.MPI_SOURCE, MPI_PROC_NULL); EQ(st.MPI_TAG, MPI_ANY_TAG);
        OK(MPI_Improbe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &flag, &m, &st)); EQ(flag, 1);
        OK(MPI_Imrecv(in, N, MPI_INT, &m, &r));
        OK(MPI_Wait(&r, &st)); EQ(st.MPI_SOURCE, MPI_PROC_NULL);
        ERR(MPI_ERR_REQUEST, MPI_Mrecv(in, N, MPI_INT, &m, &st)); /* MPI_MESSAGE_NULL */
    }

    /* Cancel: an unmatched receive is cancelled; a completed one is not. */
    {
        MPI_Request r;
        OK(MPI_Irecv(in, N, MPI_INT, prev, 400, MPI_COMM_WORLD, &r));
        OK(MPI_Cancel(&r));
        OK(MPI_Wait(&r, &st));
        OK(MPI_Test_cancelled(&st, &flag)); EQ(flag, 1);
        OK(MPI_Irecv(in, N, MPI_INT, MPI_PROC_NULL, 400, MPI_COMM_WORLD, &r));
        OK(MPI_Cancel(&r));
        OK(MPI_Wait(&r, &st));
        OK(MPI_Test_cancelled(&st, &flag)); EQ(flag, 0);
        MPI_Request nr = MPI_REQUEST_NULL;
        ERR(MPI_ERR_REQUEST, MPI_Cancel(&nr));
    }

    /* Get_elements, Status_set_elements, Status_set_cancelled. */
    {
        MPI_Status s;
        memset(&s, 0, sizeof s);
        OK(MPI_Status_set_elements(&s, MPI_INT, 5));
        OK(MPI_Get_count(&s, MPI_INT, &count)); EQ(count, 5);
        OK(MPI_Get_elements(&s, MPI_INT, &count)); EQ(count, 5);
        OK(MPI_Get_count(&s, MPI_BYTE, &count)); EQ(count, 20);
        OK(MPI_Get_count(&s, MPI_DOUBLE, &count)); EQ(count, MPI_UNDEFINED);
        MPI_Count big = 0;
        OK(MPI_Status_set_elements_x(&s, MPI_DOUBLE, (MPI_Count)3 << 30));
        OK(MPI_Get_elements_x(&s, MPI_DOUBLE, &big)); EQ(big, (MPI_Count)3 << 30);
        OK(MPI_Get_count(&s, MPI_DOUBLE, &count)); EQ(count, MPI_UNDEFINED); /* > INT_MAX */
        OK(MPI_Get_elements(&s, MPI_BYTE, &count)); EQ(count, MPI_UNDEFINED);
        OK(MPI_Status_set_elements(&s, MPI_2INT, 3)); /* 1.5 pairs */
        OK(MPI_Get_elements(&s, MPI_2INT, &count)); EQ(count, 3);
        OK(MPI_Get_count(&s, MPI_2INT, &count)); EQ(count, MPI_UNDEFINED);
        OK(MPI_Status_set_cancelled(&s, 1));
        OK(MPI_Test_cancelled(&s, &flag)); EQ(flag, 1);
        OK(MPI_Status_set_cancelled(&s, 0));
        OK(MPI_Test_cancelled(&s, &flag)); EQ(flag, 0);
    }

    /* Request_get_status_all/any/some (MPI 4.1). */
    {
        MPI_Request r[3];
        MPI_Status sts[3];
        int idx = -1, outc = -1, ids[3];
        OK(MPI_Barrier(MPI_COMM_WORLD));
        OK(MPI_Irecv(&in[0], 1, MPI_INT, prev, 500, MPI_COMM_WORLD, &r[0]));
        OK(MPI_Irecv(&in[1], 1, MPI_INT, prev, 501, MPI_COMM_WORLD, &r[1]));
        r[2] = MPI_REQUEST_NULL;
        OK(MPI_Request_get_status_all(3, r, &flag, sts)); EQ(flag, 0);
        OK(MPI_Request_get_status_any(3, r, &idx, &flag, &st)); EQ(flag, 0);
        OK(MPI_Request_get_status_some(3, r, &outc, ids, sts)); EQ(outc, 0);
        OK(MPI_Barrier(MPI_COMM_WORLD));
        out[0] = rank * 3;
        OK(MPI_Send(out, 1, MPI_INT, next, 501, MPI_COMM_WORLD));
        do OK(MPI_Request_get_status_any(3, r, &idx, &flag, &st)); while (!flag);
        EQ(idx, 1); EQ(st.MPI_TAG, 501); TRUE(r[1] != MPI_REQUEST_NULL);
        OK(MPI_Request_get_status_some(3, r, &outc, ids, sts)); EQ(outc, 1); EQ(ids[0], 1);
        OK(MPI_Barrier(MPI_COMM_WORLD)); /* tag 500 only after every check */
        OK(MPI_Send(out, 1, MPI_INT, next, 500, MPI_COMM_WORLD));
        do OK(MPI_Request_get_status_all(3, r, &flag, sts)); while (!flag);
        EQ(sts[0].MPI_TAG, 500); EQ(sts[2].MPI_SOURCE, MPI_ANY_SOURCE);
        TRUE(r[0] != MPI_REQUEST_NULL);
        OK(MPI_Waitall(3, r, MPI_STATUSES_IGNORE));
        EQ(in[0], prev * 3); EQ(in[1], prev * 3);
        r[0] = r[1] = MPI_REQUEST_NULL;
        OK(MPI_Request_get_status_any(2, r, &idx, &flag, &st)); EQ(flag, 1); EQ(idx, MPI_UNDEFINED);
        OK(MPI_Request_get_status_some(2, r, &outc, ids, sts)); EQ(outc, MPI_UNDEFINED);
    }

    check_done("p2p_modes");
    return 0;
}
