/* Intercommunicators: create (two interleaved halves of the world, so the
 * groups are not prefixes of it), test_inter, remote size and group,
 * point-to-point with specific and wildcard sources, probes, sendrecv,
 * persistent requests, split, create, dup, idup, compare, merge three ways,
 * Intercomm_create_from_groups, and the
 * refused operations (collectives) with MPI_ERR_UNSUPPORTED_OPERATION. */
#include "check.h"

/* Point-to-point across `inter`: local rank i sends its world rank to
 * remote rank i % rsize, and receives from every remote rank j with
 * j % lsize == i, once by name and once by wildcard. */
static void traffic(MPI_Comm inter, int lsize, int rsize, MPI_Group remote) {
    int lrank = -1, world = check_rank;
    OK(MPI_Comm_rank(inter, &lrank));
    MPI_Group wgroup;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &wgroup));
    for (int pass = 0; pass < 2; pass++) {
        MPI_Request sreq;
        OK(MPI_Isend(&world, 1, MPI_INT, lrank % rsize, 5 + pass, inter, &sreq));
        for (int j = lrank; j < rsize; j += lsize) {
            int got = -1, w = -1;
            MPI_Status st;
            int src = pass == 0 ? j : MPI_ANY_SOURCE;
            OK(MPI_Recv(&got, 1, MPI_INT, src, 5 + pass, inter, &st));
            TRUE(st.MPI_SOURCE >= 0 && st.MPI_SOURCE < rsize);
            EQ(st.MPI_SOURCE % lsize, lrank);
            if (pass == 0) EQ(st.MPI_SOURCE, j);
            EQ(st.MPI_TAG, 5 + pass);
            OK(MPI_Group_translate_ranks(remote, 1, &st.MPI_SOURCE, wgroup, &w));
            EQ(got, w);
        }
        OK(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
    }
    OK(MPI_Group_free(&wgroup));
}

int main(int argc, char **argv) {
    check_init(&argc, &argv);
    int size, flag = -1, n = -1, res = -1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_test_inter(MPI_COMM_WORLD, &flag)); EQ(flag, 0);
    ERR(MPI_ERR_COMM, MPI_Comm_remote_size(MPI_COMM_WORLD, &n));
    MPI_Group g;
    ERR(MPI_ERR_COMM, MPI_Comm_remote_group(MPI_COMM_WORLD, &g));
    MPI_Comm bad;
    ERR(MPI_ERR_COMM, MPI_Intercomm_merge(MPI_COMM_WORLD, 0, &bad));
    if (size < 2) {
        check_done("intercomm");
        return 0;
    }

    /* Even world ranks on one side, odd on the other; each side's leader
     * is its local rank 0 (world 0 and world 1). */
    int color = check_rank % 2;
    MPI_Comm half, inter;
    OK(MPI_Comm_split(MPI_COMM_WORLD, color, check_rank, &half));
    int lsize = 0, lrank = -1;
    OK(MPI_Comm_size(half, &lsize));
    OK(MPI_Comm_rank(half, &lrank));
    int rsize = color == 0 ? size / 2 : (size + 1) / 2;
    OK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - color, 42, &inter));
    OK(MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN));
    OK(MPI_Comm_test_inter(inter, &flag)); EQ(flag, 1);
    OK(MPI_Comm_size(inter, &n)); EQ(n, lsize);
    OK(MPI_Comm_rank(inter, &n)); EQ(n, lrank);
    OK(MPI_Comm_remote_size(inter, &n)); EQ(n, rsize);
    MPI_Group remote, local;
    OK(MPI_Comm_remote_group(inter, &remote));
    OK(MPI_Group_size(remote, &n)); EQ(n, rsize);
    OK(MPI_Comm_group(inter, &local));
    OK(MPI_Group_size(local, &n)); EQ(n, lsize);
    {
        /* Remote rank r is world rank 2r + (1 - color). */
        MPI_Group wgroup;
        OK(MPI_Comm_group(MPI_COMM_WORLD, &wgroup));
        for (int r = 0; r < rsize; r++) {
            int w = -1;
            OK(MPI_Group_translate_ranks(remote, 1, &r, wgroup, &w));
            EQ(w, 2 * r + (1 - color));
        }
        OK(MPI_Group_free(&wgroup));
    }

    traffic(inter, lsize, rsize, remote);

    /* A bad remote rank, a probe, a sendrecv and a persistent send. */
    int x = 0;
    ERR(MPI_ERR_RANK, MPI_Send(&x, 1, MPI_INT, rsize, 0, inter));
    if (lrank == 0) {
        MPI_Status st;
        int v = check_rank, got = -1, count = -1;
        MPI_Request p;
        OK(MPI_Send_init(&v, 1, MPI_INT, 0, 9, inter, &p));
        OK(MPI_Start(&p));
        OK(MPI_Probe(0, 9, inter, &st));
        EQ(st.MPI_SOURCE, 0);
        OK(MPI_Get_count(&st, MPI_INT, &count)); EQ(count, 1);
        OK(MPI_Recv(&got, 1, MPI_INT, 0, 9, inter, MPI_STATUS_IGNORE));
        EQ(got, 1 - color);
        OK(MPI_Wait(&p, MPI_STATUS_IGNORE));
        OK(MPI_Request_free(&p));
        OK(MPI_Sendrecv(&v, 1, MPI_INT, 0, 10, &got, 1, MPI_INT, 0, 10, inter, &st));
        EQ(got, 1 - color); EQ(st.MPI_SOURCE, 0);
    }

    /* Refused: collectives on an intercommunicator. */
    ERR(MPI_ERR_UNSUPPORTED_OPERATION, MPI_Barrier(inter));
    int one = 1, sum = 0;
    ERR(MPI_ERR_UNSUPPORTED_OPERATION, MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, inter));

    /* split: local ranks of one parity with the remote ranks of the same
     * parity, keys reversing the order; a parity the other side lacks
     * (a remote side of one) gives MPI_COMM_NULL. */
    MPI_Comm sub;
    int par = lrank % 2;
    OK(MPI_Comm_split(inter, par, -lrank, &sub));
    int rsub = rsize / 2 + (par == 0 ? rsize % 2 : 0);
    int lsub = lsize / 2 + (par == 0 ? lsize % 2 : 0);
    if (rsub == 0) {
        TRUE(sub == MPI_COMM_NULL);
    } else {
        OK(MPI_Comm_test_inter(sub, &flag)); EQ(flag, 1);
        OK(MPI_Comm_size(sub, &n)); EQ(n, lsub);
        OK(MPI_Comm_rank(sub, &n)); EQ(n, lsub - 1 - lrank / 2);
        OK(MPI_Comm_remote_size(sub, &n)); EQ(n, rsub);
        MPI_Group subremote;
        OK(MPI_Comm_remote_group(sub, &subremote));
        traffic(sub, lsub, rsub, subremote);
        OK(MPI_Group_free(&subremote));
        OK(MPI_Comm_free(&sub));
    }
    OK(MPI_Comm_split(inter, MPI_UNDEFINED, 0, &sub));
    TRUE(sub == MPI_COMM_NULL);

    /* create: each side passes the first half (rounded up) of its group. */
    {
        MPI_Group firsts;
        int range[1][3] = {{0, (lsize + 1) / 2 - 1, 1}};
        OK(MPI_Group_range_incl(local, 1, range, &firsts));
        OK(MPI_Comm_create(inter, firsts, &sub));
        if (lrank >= (lsize + 1) / 2) {
            TRUE(sub == MPI_COMM_NULL);
        } else {
            OK(MPI_Comm_test_inter(sub, &flag)); EQ(flag, 1);
            OK(MPI_Comm_size(sub, &n)); EQ(n, (lsize + 1) / 2);
            OK(MPI_Comm_remote_size(sub, &n)); EQ(n, (rsize + 1) / 2);
            MPI_Group subremote;
            OK(MPI_Comm_remote_group(sub, &subremote));
            traffic(sub, (lsize + 1) / 2, (rsize + 1) / 2, subremote);
            OK(MPI_Group_free(&subremote));
            OK(MPI_Comm_free(&sub));
        }
        OK(MPI_Group_free(&firsts));
    }

    /* dup: another intercommunicator of the same groups. */
    MPI_Comm dup;
    OK(MPI_Comm_dup(inter, &dup));
    OK(MPI_Comm_test_inter(dup, &flag)); EQ(flag, 1);
    OK(MPI_Comm_compare(inter, dup, &res)); EQ(res, MPI_CONGRUENT);
    OK(MPI_Comm_compare(inter, inter, &res)); EQ(res, MPI_IDENT);
    OK(MPI_Comm_compare(inter, half, &res)); EQ(res, MPI_UNEQUAL);
    traffic(dup, lsize, rsize, remote);

    /* Intercomm_create_from_groups (MPI 4.0) from the same two groups,
     * each side's leader its last rank this time. */
    {
        MPI_Comm fg;
        MPI_Errhandler feh;
        OK(MPI_Intercomm_create_from_groups(local, lsize - 1, remote, rsize - 1, "ferry.intercomm",
                                            MPI_INFO_NULL, MPI_ERRORS_RETURN, &fg));
        OK(MPI_Comm_test_inter(fg, &flag)); EQ(flag, 1);
        OK(MPI_Comm_remote_size(fg, &n)); EQ(n, rsize);
        OK(MPI_Comm_compare(inter, fg, &res)); EQ(res, MPI_CONGRUENT);
        OK(MPI_Comm_get_errhandler(fg, &feh)); TRUE(feh == MPI_ERRORS_RETURN);
        traffic(fg, lsize, rsize, remote);
        OK(MPI_Comm_free(&fg));
    }

    /* idup: two in flight on the intercommunicator, with traffic and a
     * blocking dup in between, completed in opposite orders on the two sides. */
    {
        MPI_Comm i1 = MPI_COMM_NULL, i2 = MPI_COMM_NULL;
        MPI_Request ir[2];
        OK(MPI_Comm_idup(inter, &i1, &ir[0]));
        traffic(inter, lsize, rsize, remote);
        OK(MPI_Comm_idup(dup, &i2, &ir[1]));
        /* A blocking dup while both are in flight. */
        MPI_Comm d3;
        OK(MPI_Comm_dup(inter, &d3));
        traffic(d3, lsize, rsize, remote);
        OK(MPI_Comm_free(&d3));
        if (color == 0) {
            OK(MPI_Wait(&ir[0], MPI_STATUS_IGNORE)); OK(MPI_Wait(&ir[1], MPI_STATUS_IGNORE));
        } else {
            OK(MPI_Wait(&ir[1], MPI_STATUS_IGNORE)); OK(MPI_Wait(&ir[0], MPI_STATUS_IGNORE));
        }
        OK(MPI_Comm_test_inter(i1, &flag)); EQ(flag, 1);
        OK(MPI_Comm_remote_size(i2, &n)); EQ(n, rsize);
        OK(MPI_Comm_compare(inter, i1, &res)); EQ(res, MPI_CONGRUENT);
        OK(MPI_Comm_compare(i1, i2, &res)); EQ(res, MPI_CONGRUENT);
        traffic(i1, lsize, rsize, remote);
        traffic(i2, lsize, rsize, remote);
        OK(MPI_Comm_free(&i1)); OK(MPI_Comm_free(&i2));
    }

    /* merge, the odd side high: the even ranks first, then the odd. */
    MPI_Comm merged;
    OK(MPI_Intercomm_merge(inter, color, &merged));
    OK(MPI_Comm_test_inter(merged, &flag)); EQ(flag, 0);
    OK(MPI_Comm_size(merged, &n)); EQ(n, size);
    OK(MPI_Comm_rank(merged, &n));
    EQ(n, color == 0 ? lrank : size - size / 2 + lrank);
    OK(MPI_Allreduce(&check_rank, &sum, 1, MPI_INT, MPI_SUM, merged));
    EQ(sum, size * (size - 1) / 2);
    OK(MPI_Comm_free(&merged));
    /* The even side high: the odd ranks first. */
    OK(MPI_Intercomm_merge(dup, 1 - color, &merged));
    OK(MPI_Comm_rank(merged, &n));
    EQ(n, color == 1 ? lrank : size / 2 + lrank);
    OK(MPI_Comm_free(&merged));
    /* Both the same: the side whose leader has the lower world rank. */
    OK(MPI_Intercomm_merge(inter, 0, &merged));
    OK(MPI_Comm_rank(merged, &n));
    EQ(n, color == 0 ? lrank : size - size / 2 + lrank);
    OK(MPI_Comm_free(&merged));

    OK(MPI_Group_free(&remote));
    OK(MPI_Group_free(&local));
    OK(MPI_Comm_free(&dup));
    OK(MPI_Comm_free(&inter));
    OK(MPI_Comm_free(&half));
    check_done("intercomm");
    return 0;
}
