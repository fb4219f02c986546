/* Intercommunicators: create (two interleaved halves of the world, so the
 * groups are not prefixes of it), test_inter, remote size and group,
 * point-to-point with specific and wildcard sources, probes, sendrecv,
 * persistent requests, split, create, dup, idup, compare, merge three ways,
 * Intercomm_create_from_groups, and every collective (blocking, nonblocking and persistent, roots on both sides,
 * groups of different sizes on an odd world); scan and exscan are refused
 * with MPI_ERR_UNSUPPORTED_OPERATION, MPI_IN_PLACE with MPI_ERR_ARG. */
#include "check.h"
#include <string.h>
#include <unistd.h>

/* One collective (`name` and its lower-case spelling, for MPI_I`lower`) in `mode`: 0 blocking, 1 MPI_I* and wait, 2 MPI_*_init
 * started twice (a persistent request runs again on the same buffers). */
#define COLL(mode, name, lower, ...) do { \
    if ((mode) == 0) { OK(MPI_##name(__VA_ARGS__)); break; } \
    MPI_Request r_; \
    if ((mode) == 1) { OK(MPI_I##lower(__VA_ARGS__, &r_)); \
        OK(MPI_Wait(&r_, MPI_STATUS_IGNORE)); break; } \
    OK(MPI_##name##_init(__VA_ARGS__, MPI_INFO_NULL, &r_)); \
    for (int k_ = 0; k_ < 2; k_++) { OK(MPI_Start(&r_)); OK(MPI_Wait(&r_, MPI_STATUS_IGNORE)); } \
    OK(MPI_Request_free(&r_)); } while (0)

/* Non-commutative: the decimal digits of the left operand, then the
 * right's (contributions are single digits, so the result spells the
 * order of the operands). */
static void concat(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    for (int i = 0; i < *len; i++) {
        int a = ((int *)in)[i], b = ((int *)inout)[i], p = 1;
        while (p <= b) p *= 10;
        ((int *)inout)[i] = a * p + b;
    }
}

/* The digits 1..n in order: what `concat` makes of remote ranks 0..n-1
 * contributing rank + 1. */
static int digits(int n) {
    int v = 0;
    for (int i = 1; i <= n; i++) v = v * 10 + i;
    return v;
}

/* Every collective on `inter` (local rank `lrank` of `lsize` on side
 * `color`, the even world ranks being side 0; remote rank j is world rank
 * 2j + 1 - color). */
static void collectives(MPI_Comm inter, int color, int lsize, int lrank, int rsize) {
    int me = check_rank, other = 1 - color;
    int remote_sum = 0;
    for (int j = 0; j < rsize; j++) remote_sum += 2 * j + other;
    MPI_Op cat;
    OK(MPI_Op_create(concat, 0, &cat));
    for (int mode = 0; mode < 3; mode++) {
        /* Barrier: one side's last member comes late; no member of the
         * other side leaves before it has entered. */
        for (int late = 0; late < 2; late++) {
            OK(MPI_Barrier(MPI_COMM_WORLD));
            double t0 = MPI_Wtime();
            if (color == late && lrank == lsize - 1) usleep(300000);
            COLL(mode, Barrier, barrier, inter);
            if (color != late) TRUE(MPI_Wtime() - t0 > 0.2);
        }
        /* Rooted collectives, the root the last member of side `rs`. */
        for (int rs = 0; rs < 2; rs++) {
            int in_root_side = color == rs;
            int rlast = in_root_side ? lsize - 1 : rsize - 1;
            int root = in_root_side ? (lrank == rlast ? MPI_ROOT : MPI_PROC_NULL) : rlast;
            int am_root = root == MPI_ROOT, idle = root == MPI_PROC_NULL;
            int n = in_root_side ? rsize : lsize; /* the non-root side's size */
            int buf[3], big[64], counts[32], displs[32], v[32];
            /* bcast */
            for (int k = 0; k < 3; k++) buf[k] = am_root ? 100 * rs + k : -1;
            COLL(mode, Bcast, bcast, buf, 3, MPI_INT, root, inter);
            for (int k = 0; k < 3; k++) EQ(buf[k], idle ? -1 : 100 * rs + k);
            /* gather: two ints from each member of the other side */
            for (int k = 0; k < 64; k++) big[k] = -1;
            v[0] = me; v[1] = 10 * me;
            COLL(mode, Gather, gather, v, 2, MPI_INT, big, 2, MPI_INT, root, inter);
            for (int j = 0; j < 2 * n; j++)
                EQ(big[j], am_root ? (j % 2 ? 10 : 1) * (2 * (j / 2) + other) : -1);
            /* gatherv: remote rank j sends j + 1 ints, placed in reverse
             * rank order */
            for (int k = 0; k < 64; k++) big[k] = -1;
            for (int k = 0; k <= lrank; k++) v[k] = me;
            for (int j = n - 1, at = 0; j >= 0; j--) { counts[j] = j + 1; displs[j] = at; at += j + 1; }
            COLL(mode, Gatherv, gatherv, v, lrank + 1, MPI_INT, big, counts, displs, MPI_INT, root, inter);
            if (am_root)
                for (int j = 0; j < n; j++)
                    for (int k = 0; k <= j; k++) EQ(big[displs[j] + k], 2 * j + other);
            else
                EQ(big[0], -1);
            /* scatter: block j (two ints) to remote rank j */
            for (int j = 0; j < n; j++) { big[2 * j] = 100 + j; big[2 * j + 1] = 200 + j; }
            v[0] = v[1] = -1;
            COLL(mode, Scatter, scatter, big, 2, MPI_INT, v, 2, MPI_INT, root, inter);
            EQ(v[0], in_root_side ? -1 : 100 + lrank);
            EQ(v[1], in_root_side ? -1 : 200 + lrank);
            /* scatterv: j + 1 ints to remote rank j, from reverse places */
            for (int j = 0; j < n; j++)
                for (int k = 0; k <= j; k++) big[displs[j] + k] = 1000 + j;
            for (int k = 0; k < 32; k++) v[k] = -1;
            COLL(mode, Scatterv, scatterv, big, counts, displs, MPI_INT, v, lrank + 1, MPI_INT, root, inter);
            for (int k = 0; k <= lrank; k++) EQ(v[k], in_root_side ? -1 : 1000 + lrank);
            /* reduce: sum, and the order of a non-commutative op */
            int in2[2] = {me, lrank + 1}, out2[2] = {-1, -1};
            COLL(mode, Reduce, reduce, in2, out2, 1, MPI_INT, MPI_SUM, root, inter);
            EQ(out2[0], am_root ? (in_root_side ? remote_sum : 0) : -1);
            COLL(mode, Reduce, reduce, &in2[1], &out2[1], 1, MPI_INT, cat, root, inter);
            EQ(out2[1], am_root ? digits(rsize) : -1);
        }
        /* allreduce: each side gets the other's sum, and its order */
        int in2[2] = {me, lrank + 1}, out2[2] = {-1, -1};
        COLL(mode, Allreduce, allreduce, in2, out2, 1, MPI_INT, MPI_SUM, inter);
        EQ(out2[0], remote_sum);
        COLL(mode, Allreduce, allreduce, &in2[1], &out2[1], 1, MPI_INT, cat, inter);
        EQ(out2[1], digits(rsize));
        /* allgather: side 1 sends two ints each, side 0 one */
        int send[64], recv[64], sc[32], sd[32], rc[32], rd[32];
        send[0] = me; send[1] = -me;
        for (int k = 0; k < 64; k++) recv[k] = -7;
        int mine = color == 0 ? 1 : 2, theirs = 3 - mine;
        COLL(mode, Allgather, allgather, send, mine, MPI_INT, recv, theirs, MPI_INT, inter);
        for (int j = 0; j < rsize; j++) {
            EQ(recv[theirs * j], 2 * j + other);
            if (theirs == 2) EQ(recv[2 * j + 1], -(2 * j + other));
        }
        /* allgatherv: remote rank j sends j + 1 ints, in reverse places */
        for (int k = 0; k <= lrank; k++) send[k] = me;
        for (int j = rsize - 1, at = 0; j >= 0; j--) { rc[j] = j + 1; rd[j] = at; at += j + 1; }
        COLL(mode, Allgatherv, allgatherv, send, lrank + 1, MPI_INT, recv, rc, rd, MPI_INT, inter);
        for (int j = 0; j < rsize; j++)
            for (int k = 0; k <= j; k++) EQ(recv[rd[j] + k], 2 * j + other);
        /* alltoall: block j (one int) to remote rank j */
        for (int j = 0; j < rsize; j++) send[j] = 1000 * me + j;
        COLL(mode, Alltoall, alltoall, send, 1, MPI_INT, recv, 1, MPI_INT, inter);
        for (int j = 0; j < rsize; j++) EQ(recv[j], 1000 * (2 * j + other) + lrank);
        /* alltoallv: lrank + 1 ints to each remote rank; j + 1 from remote
         * rank j, received in reverse places */
        for (int j = 0, at = 0; j < rsize; j++) {
            sc[j] = lrank + 1; sd[j] = at;
            for (int k = 0; k <= lrank; k++) send[at + k] = 1000 * me + j;
            at += lrank + 1;
        }
        for (int j = rsize - 1, at = 0; j >= 0; j--) { rc[j] = j + 1; rd[j] = at; at += j + 1; }
        for (int k = 0; k < 64; k++) recv[k] = -7;
        COLL(mode, Alltoallv, alltoallv, send, sc, sd, MPI_INT, recv, rc, rd, MPI_INT, inter);
        for (int j = 0; j < rsize; j++)
            for (int k = 0; k <= j; k++) EQ(recv[rd[j] + k], 1000 * (2 * j + other) + lrank);
        /* alltoallw: the same, displacements in bytes */
        MPI_Datatype st[32], rt[32];
        for (int j = 0; j < rsize; j++) {
            st[j] = rt[j] = MPI_INT; sd[j] *= (int)sizeof(int); rd[j] *= (int)sizeof(int);
        }
        for (int k = 0; k < 64; k++) recv[k] = -7;
        COLL(mode, Alltoallw, alltoallw, send, sc, sd, st, recv, rc, rd, rt, inter);
        for (int j = 0; j < rsize; j++)
            for (int k = 0; k <= j; k++)
                EQ(recv[rd[j] / (int)sizeof(int) + k], 1000 * (2 * j + other) + lrank);
        /* reduce_scatter_block: vectors of lsize * rsize ints (the same
         * length on both sides), rsize per member of this side */
        int total = lsize * rsize;
        for (int k = 0; k < total; k++) send[k] = me + k;
        for (int k = 0; k < 64; k++) recv[k] = -7;
        COLL(mode, Reduce_scatter_block, reduce_scatter_block, send, recv, rsize, MPI_INT, MPI_SUM, inter);
        for (int k = 0; k < rsize; k++) EQ(recv[k], remote_sum + rsize * (lrank * rsize + k));
        /* reduce_scatter: this side's own counts (local rank 0 gets none,
         * the last twice as many), unknown to the other side */
        int cnt[32];
        for (int i = 0; i < lsize; i++) cnt[i] = rsize;
        if (lsize > 1) { cnt[0] = 0; cnt[lsize - 1] = 2 * rsize; }
        int first = 0;
        for (int i = 0; i < lrank; i++) first += cnt[i];
        for (int k = 0; k < 64; k++) recv[k] = -7;
        COLL(mode, Reduce_scatter, reduce_scatter, send, recv, cnt, MPI_INT, MPI_SUM, inter);
        for (int k = 0; k < cnt[lrank]; k++) EQ(recv[k], remote_sum + rsize * (first + k));
        EQ(recv[cnt[lrank]], -7);
    }
    /* A nonblocking collective in flight across a dup, whose leaders
     * exchange on the context the collectives travel on. */
    {
        MPI_Request pend;
        MPI_Comm d;
        int x = me, y = -1;
        OK(MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, inter, &pend));
        OK(MPI_Comm_dup(inter, &d));
        OK(MPI_Wait(&pend, MPI_STATUS_IGNORE));
        EQ(y, remote_sum);
        y = -1;
        OK(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_MAX, d));
        EQ(y, 2 * (rsize - 1) + other);
        OK(MPI_Comm_free(&d));
    }
    /* Refused: scan and exscan (undefined), MPI_IN_PLACE (erroneous). */
    int one = 1, sum = 0;
    ERR(MPI_ERR_UNSUPPORTED_OPERATION, MPI_Scan(&one, &sum, 1, MPI_INT, MPI_SUM, inter));
    ERR(MPI_ERR_UNSUPPORTED_OPERATION, MPI_Exscan(&one, &sum, 1, MPI_INT, MPI_SUM, inter));
    MPI_Request r;
    ERR(MPI_ERR_UNSUPPORTED_OPERATION, MPI_Iscan(&one, &sum, 1, MPI_INT, MPI_SUM, inter, &r));
    ERR(MPI_ERR_ARG, MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_INT, MPI_SUM, inter));
    ERR(MPI_ERR_ARG, MPI_Iallgather(MPI_IN_PLACE, 1, MPI_INT, &sum, 1, MPI_INT, inter, &r));
    /* Still in step after the refusals. */
    OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, inter));
    EQ(sum, rsize);
    OK(MPI_Op_free(&cat));
}

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

    collectives(inter, color, lsize, lrank, rsize);
    int sum = 0;

    /* The large-count v-collectives take arrays per remote rank too: each
     * member gets remote rank j's world rank (2j + 1 - color) from
     * Allgatherv_c, and side 0's last member, as MPI_ROOT, the same from
     * Gatherv_c. */
    {
        MPI_Count rc[64];
        MPI_Aint rd[64];
        int got[64], mine = check_rank;
        for (int j = 0; j < rsize; j++) { rc[j] = 1; rd[j] = rsize - 1 - j; got[j] = -1; }
        OK(MPI_Allgatherv_c(&mine, 1, MPI_INT, got, rc, rd, MPI_INT, inter));
        for (int j = 0; j < rsize; j++) EQ(got[rsize - 1 - j], 2 * j + 1 - color);
        int root = color == 0 ? (lrank == lsize - 1 ? MPI_ROOT : MPI_PROC_NULL) : rsize - 1;
        for (int j = 0; j < rsize; j++) got[j] = -1;
        OK(MPI_Gatherv_c(&mine, 1, MPI_INT, got, rc, rd, MPI_INT, root, inter));
        if (root == MPI_ROOT)
            for (int j = 0; j < rsize; j++) EQ(got[rsize - 1 - j], 2 * j + 1);
    }

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
