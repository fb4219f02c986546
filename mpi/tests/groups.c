/* Groups and communicator creation: every Group_* call, MPI_GROUP_EMPTY,
 * Comm_group, Comm_create, Comm_create_group, Comm_split_type, Comm_idup(_with_info),
 * Comm_dup_with_info, Comm_set_info/get_info, and user attributes with
 * copy/delete callbacks on dup/free (and MPI_COMM_SELF at finalize). */
#include "check.h"
#include <string.h>

static int deletes, copies, self_deleted;

static int copy_fn(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag) {
    (void)comm; (void)keyval;
    EQ(*(int *)extra, 42);
    copies++;
    *(void **)out = (char *)in + 1; /* the copy's value is the old one + 1 */
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm comm, int keyval, void *value, void *extra) {
    (void)comm; (void)keyval; (void)value;
    EQ(*(int *)extra, 42);
    deletes++;
    return MPI_SUCCESS;
}

static int self_delete(MPI_Comm comm, int keyval, void *value, void *extra) {
    (void)keyval; (void)extra;
    TRUE(comm == MPI_COMM_SELF);
    EQ((long)value, 7);
    self_deleted++;
    /* MPI still works inside the callback at finalize. */
    int r = -1;
    OK(MPI_Comm_rank(MPI_COMM_SELF, &r)); EQ(r, 0);
    return MPI_SUCCESS;
}

static int failing_delete(MPI_Comm comm, int keyval, void *value, void *extra) {
    (void)comm; (void)keyval; (void)value; (void)extra;
    return MPI_ERR_OTHER;
}

int main(int argc, char **argv) {
    check_init(&argc, &argv);
    int size, rank = check_rank, r = -1, s = -1, res = -1, flag = -1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));

    /* Groups. */
    MPI_Group world, evens, odds, rev, u, inter, diff, g;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    OK(MPI_Group_size(world, &s)); EQ(s, size);
    OK(MPI_Group_rank(world, &r)); EQ(r, rank);
    int nev = (size + 1) / 2, ranks[64], back[64];
    for (int i = 0; i < nev; i++) ranks[i] = 2 * i;
    OK(MPI_Group_incl(world, nev, ranks, &evens));
    OK(MPI_Group_size(evens, &s)); EQ(s, nev);
    OK(MPI_Group_rank(evens, &r)); EQ(r, rank % 2 ? MPI_UNDEFINED : rank / 2);
    OK(MPI_Group_excl(world, nev, ranks, &odds));
    OK(MPI_Group_size(odds, &s)); EQ(s, size - nev);
    int range[1][3] = {{size - 1, 0, -1}};
    OK(MPI_Group_range_incl(world, 1, range, &rev));
    OK(MPI_Group_rank(rev, &r)); EQ(r, size - 1 - rank);
    OK(MPI_Group_compare(world, rev, &res)); EQ(res, size == 1 ? MPI_IDENT : MPI_SIMILAR);
    OK(MPI_Group_compare(world, world, &res)); EQ(res, MPI_IDENT);
    OK(MPI_Group_compare(world, evens, &res)); EQ(res, size == 1 ? MPI_IDENT : MPI_UNEQUAL);
    int evr[1][3] = {{0, size - 1, 2}};
    OK(MPI_Group_range_excl(world, 1, evr, &g));
    OK(MPI_Group_compare(g, odds, &res)); EQ(res, MPI_IDENT);
    OK(MPI_Group_free(&g)); TRUE(g == MPI_GROUP_NULL);
    OK(MPI_Group_union(odds, evens, &u));
    OK(MPI_Group_size(u, &s)); EQ(s, size);
    OK(MPI_Group_compare(u, world, &res)); EQ(res, size == 1 ? MPI_IDENT : MPI_SIMILAR);
    OK(MPI_Group_intersection(evens, odds, &inter));
    TRUE(inter == MPI_GROUP_EMPTY);
    OK(MPI_Group_size(MPI_GROUP_EMPTY, &s)); EQ(s, 0);
    OK(MPI_Group_rank(MPI_GROUP_EMPTY, &r)); EQ(r, MPI_UNDEFINED);
    OK(MPI_Group_difference(world, odds, &diff));
    OK(MPI_Group_compare(diff, evens, &res)); EQ(res, MPI_IDENT);
    /* translate: world ranks into the reversed group, PROC_NULL stays. */
    for (int i = 0; i < size; i++) ranks[i] = i;
    ranks[size] = MPI_PROC_NULL;
    OK(MPI_Group_translate_ranks(world, size + 1, ranks, rev, back));
    for (int i = 0; i < size; i++) EQ(back[i], size - 1 - i);
    EQ(back[size], MPI_PROC_NULL);
    OK(MPI_Group_translate_ranks(world, size, ranks, evens, back));
    for (int i = 0; i < size; i++) EQ(back[i], i % 2 ? MPI_UNDEFINED : i / 2);
    ranks[0] = size; /* out of range */
    ERR(MPI_ERR_RANK, MPI_Group_translate_ranks(world, 1, ranks, evens, back));
    ranks[0] = 0; ranks[1] = 0;
    if (size > 1) ERR(MPI_ERR_ARG, MPI_Group_incl(world, 2, ranks, &g)); /* listed twice */
    ERR(MPI_ERR_GROUP, MPI_Group_size(MPI_GROUP_NULL, &s));

    /* Comm_create over the evens (collective over world). */
    MPI_Comm ev;
    OK(MPI_Comm_create(MPI_COMM_WORLD, evens, &ev));
    if (rank % 2) TRUE(ev == MPI_COMM_NULL);
    else {
        OK(MPI_Comm_size(ev, &s)); EQ(s, nev);
        OK(MPI_Comm_rank(ev, &r)); EQ(r, rank / 2);
        int v = rank, sum = 0;
        OK(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, ev));
        EQ(sum, 2 * (nev * (nev - 1) / 2));
        MPI_Group eg;
        OK(MPI_Comm_group(ev, &eg));
        OK(MPI_Group_compare(eg, evens, &res)); EQ(res, MPI_IDENT);
        OK(MPI_Group_free(&eg));
        OK(MPI_Comm_free(&ev));
    }
    /* Comm_create_group over the whole group (reversed), and over self. */
    MPI_Comm cg;
    OK(MPI_Comm_create_group(MPI_COMM_WORLD, rev, 5, &cg));
    OK(MPI_Comm_rank(cg, &r)); EQ(r, size - 1 - rank);
    OK(MPI_Comm_free(&cg));
    MPI_Group me;
    OK(MPI_Comm_group(MPI_COMM_SELF, &me));
    OK(MPI_Comm_create_group(MPI_COMM_WORLD, me, 6, &cg));
    OK(MPI_Comm_size(cg, &s)); EQ(s, 1);
    OK(MPI_Comm_free(&cg));
    /* A proper subgroup: the even ranks and the odd ranks each make their
     * own at once (only the members call; the same tag, disjoint groups). */
    {
        MPI_Comm part;
        int mine = rank % 2, members = (size - mine + 1) / 2, v = 1, tot = 0;
        OK(MPI_Comm_create_group(MPI_COMM_WORLD, mine ? odds : evens, 7, &part));
        OK(MPI_Comm_size(part, &s)); EQ(s, members);
        OK(MPI_Comm_rank(part, &r)); EQ(r, rank / 2);
        OK(MPI_Allreduce(&v, &tot, 1, MPI_INT, MPI_SUM, part)); EQ(tot, members);
        /* Nested: the first two members of it, called by those two only. */
        if (members > 2 && r < 2) {
            MPI_Group pg, two;
            int firsts[2] = {0, 1};
            MPI_Comm pair;
            OK(MPI_Comm_group(part, &pg));
            OK(MPI_Group_incl(pg, 2, firsts, &two));
            OK(MPI_Comm_create_group(part, two, 8, &pair));
            OK(MPI_Comm_size(pair, &s)); EQ(s, 2);
            OK(MPI_Allreduce(&rank, &tot, 1, MPI_INT, MPI_SUM, pair)); EQ(tot, 2 * mine + 2);
            OK(MPI_Comm_free(&pair));
            OK(MPI_Group_free(&two)); OK(MPI_Group_free(&pg));
        }
        OK(MPI_Comm_free(&part));
    }
    if (rank % 2) ERR(MPI_ERR_GROUP, MPI_Comm_create_group(MPI_COMM_WORLD, evens, 8, &cg));
    OK(MPI_Group_free(&me));

    /* Comm_split_type: every process here shares one node. */
    MPI_Comm node, none;
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
    OK(MPI_Comm_size(node, &s)); EQ(s, size);
    OK(MPI_Comm_compare(node, MPI_COMM_WORLD, &res)); EQ(res, MPI_CONGRUENT);
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_UNDEFINED, 0, MPI_INFO_NULL, &none)); TRUE(none == MPI_COMM_NULL);
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_UNGUIDED, 0, MPI_INFO_NULL, &none)); TRUE(none == MPI_COMM_NULL);
    MPI_Info hw;
    OK(MPI_Info_create(&hw));
    OK(MPI_Info_set(hw, "mpi_hw_resource_type", "mpi_shared_memory"));
    MPI_Comm hwc;
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, -rank, hw, &hwc));
    OK(MPI_Comm_rank(hwc, &r)); EQ(r, size - 1 - rank); /* keyed by -rank */
    OK(MPI_Comm_free(&hwc));
    OK(MPI_Info_set(hw, "mpi_hw_resource_type", "no_such_thing"));
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, hw, &hwc)); TRUE(hwc == MPI_COMM_NULL);
    OK(MPI_Info_free(&hw));
    OK(MPI_Comm_free(&node));

    /* Attributes: set/get/delete; dup copies through the callback; free
     * deletes; freed keyvals still delete; a failing delete fails free. */
    static int extra = 42;
    int key = MPI_KEYVAL_INVALID, key2, dupkey;
    OK(MPI_Comm_create_keyval(copy_fn, delete_fn, &key, &extra));
    OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &key2, NULL));
    OK(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &dupkey, NULL));
    TRUE(key != MPI_KEYVAL_INVALID && key != key2);
    MPI_Comm a, b;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &a));
    void *val = NULL;
    OK(MPI_Comm_get_attr(a, key, &val, &flag)); EQ(flag, 0);
    OK(MPI_Comm_set_attr(a, key, (void *)100));
    OK(MPI_Comm_set_attr(a, key2, (void *)200));
    OK(MPI_Comm_set_attr(a, dupkey, (void *)300));
    OK(MPI_Comm_get_attr(a, key, &val, &flag)); EQ(flag, 1); EQ((long)val, 100);
    OK(MPI_Comm_set_attr(a, key, (void *)101)); EQ(deletes, 1); /* replacing deletes the old */
    OK(MPI_Comm_dup(a, &b)); EQ(copies, 1);
    OK(MPI_Comm_get_attr(b, key, &val, &flag)); EQ(flag, 1); EQ((long)val, 102);
    OK(MPI_Comm_get_attr(b, key2, &val, &flag)); EQ(flag, 0); /* NULL_COPY_FN */
    OK(MPI_Comm_get_attr(b, dupkey, &val, &flag)); EQ(flag, 1); EQ((long)val, 300);
    OK(MPI_Comm_delete_attr(a, key)); EQ(deletes, 2);
    OK(MPI_Comm_get_attr(a, key, &val, &flag)); EQ(flag, 0);
    ERR(MPI_ERR_KEYVAL, MPI_Comm_delete_attr(a, key));
    OK(MPI_Comm_free_keyval(&key)); EQ(key, MPI_KEYVAL_INVALID);
    OK(MPI_Comm_free(&b)); EQ(deletes, 3); /* b's copy, through a freed key */
    int *tag_ub = NULL;
    OK(MPI_Comm_get_attr(a, MPI_TAG_UB, &tag_ub, &flag)); EQ(flag, 1); TRUE(*tag_ub >= 32767);
    int bad;
    OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, failing_delete, &bad, NULL));
    OK(MPI_Comm_set_attr(a, bad, (void *)1));
    ERR(MPI_ERR_OTHER, MPI_Comm_free(&a));
    TRUE(a != MPI_COMM_NULL); /* not freed */
    OK(MPI_Comm_get_attr(a, bad, &val, &flag)); EQ(flag, 1);
    ERR(MPI_ERR_KEYVAL, MPI_Comm_get_attr(a, 12345, &val, &flag));
    OK(MPI_Comm_free_keyval(&key2));
    ERR(MPI_ERR_KEYVAL, MPI_Comm_set_attr(a, key2, (void *)1));
    int self_key;
    OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete, &self_key, NULL));
    OK(MPI_Comm_set_attr(MPI_COMM_SELF, self_key, (void *)7));

    /* Comm_idup: the handle appears when the request completes; traffic on
     * it; mixed with other requests in Waitall. */
    MPI_Comm id1, id2;
    MPI_Request rq[3];
    int sendv = rank, recvv = -1;
    OK(MPI_Comm_idup(MPI_COMM_WORLD, &id1, &rq[0]));
    OK(MPI_Irecv(&recvv, 1, MPI_INT, (rank + size - 1) % size, 9, MPI_COMM_WORLD, &rq[1]));
    OK(MPI_Isend(&sendv, 1, MPI_INT, (rank + 1) % size, 9, MPI_COMM_WORLD, &rq[2]));
    OK(MPI_Waitall(3, rq, MPI_STATUSES_IGNORE));
    EQ(recvv, (rank + size - 1) % size);
    OK(MPI_Comm_compare(id1, MPI_COMM_WORLD, &res)); EQ(res, MPI_CONGRUENT);
    OK(MPI_Comm_idup(id1, &id2, &rq[0]));
    do OK(MPI_Test(&rq[0], &flag, MPI_STATUS_IGNORE)); while (!flag);
    int one = 1, tot = 0;
    OK(MPI_Allreduce(&one, &tot, 1, MPI_INT, MPI_SUM, id2)); EQ(tot, size);
    OK(MPI_Comm_free(&id2)); OK(MPI_Comm_free(&id1));
    /* Two idups in flight on different communicators, started in opposite
     * orders on even and odd ranks (legal: the order rule is per
     * communicator); completed by Waitall, and by two Waits. */
    {
        MPI_Comm a, b, na, nb;
        MPI_Request two[2];
        OK(MPI_Comm_dup(MPI_COMM_WORLD, &a)); OK(MPI_Comm_dup(MPI_COMM_WORLD, &b));
        for (int round = 0; round < 2; round++) {
            if (rank % 2 == 0) {
                OK(MPI_Comm_idup(a, &na, &two[0])); OK(MPI_Comm_idup(b, &nb, &two[1]));
            } else {
                OK(MPI_Comm_idup(b, &nb, &two[1])); OK(MPI_Comm_idup(a, &na, &two[0]));
            }
            if (round == 0) {
                OK(MPI_Waitall(2, two, MPI_STATUSES_IGNORE));
            } else {
                OK(MPI_Wait(&two[0], MPI_STATUS_IGNORE)); OK(MPI_Wait(&two[1], MPI_STATUS_IGNORE));
            }
            OK(MPI_Allreduce(&one, &tot, 1, MPI_INT, MPI_SUM, na)); EQ(tot, size);
            OK(MPI_Allreduce(&one, &tot, 1, MPI_INT, MPI_SUM, nb)); EQ(tot, size);
            OK(MPI_Comm_free(&na)); OK(MPI_Comm_free(&nb));
        }
        OK(MPI_Comm_free(&a)); OK(MPI_Comm_free(&b));
    }

    /* Several idups in flight on one communicator, each followed by a
     * nonblocking allreduce and a message on it, completed in opposite
     * orders on even and odd ranks (MPICH's comm_idup_nb). */
    {
        enum { N = 4 };
        MPI_Comm base, nc[N];
        MPI_Request r[3 * N];
        int in[N], out[N], msg[N], got[N];
        OK(MPI_Comm_dup(MPI_COMM_WORLD, &base));
        for (int i = 0; i < N; i++) {
            OK(MPI_Comm_idup(base, &nc[i], &r[3 * i]));
            in[i] = rank + i;
            OK(MPI_Iallreduce(&in[i], &out[i], 1, MPI_INT, MPI_SUM, base, &r[3 * i + 1]));
            msg[i] = 100 * rank + i;
            got[i] = -1;
            OK(MPI_Isend(&msg[i], 1, MPI_INT, (rank + 1) % size, i, base, &r[3 * i + 2]));
        }
        for (int i = 0; i < N; i++)
            OK(MPI_Recv(&got[i], 1, MPI_INT, (rank + size - 1) % size, i, base, MPI_STATUS_IGNORE));
        if (rank % 2) {
            for (int i = 3 * N - 1; i >= 0; i--) OK(MPI_Wait(&r[i], MPI_STATUS_IGNORE));
        } else {
            OK(MPI_Waitall(3 * N, r, MPI_STATUSES_IGNORE));
        }
        for (int i = 0; i < N; i++) {
            EQ(out[i], size * (size - 1) / 2 + size * i);
            EQ(got[i], 100 * ((rank + size - 1) % size) + i);
            OK(MPI_Comm_compare(base, nc[i], &res)); EQ(res, MPI_CONGRUENT);
            OK(MPI_Allreduce(&one, &tot, 1, MPI_INT, MPI_SUM, nc[i])); EQ(tot, size);
        }
        for (int i = 0; i < N; i++) OK(MPI_Comm_free(&nc[i]));
        OK(MPI_Comm_free(&base));
    }

    /* Comm_create_from_group (MPI 4.0): the even and the odd ranks each
     * make theirs at once, under different string tags. */
    {
        MPI_Group wg, part;
        MPI_Comm fc;
        int nm = 0, mine[64], fsize = -1, frank = -1;
        OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
        for (int r = rank % 2; r < size; r += 2) mine[nm++] = r;
        OK(MPI_Group_incl(wg, nm, mine, &part));
        OK(MPI_Comm_create_from_group(part, rank % 2 ? "ferry.odd" : "ferry.even", MPI_INFO_NULL,
                                      MPI_ERRORS_RETURN, &fc));
        OK(MPI_Comm_size(fc, &fsize)); EQ(fsize, nm);
        OK(MPI_Comm_rank(fc, &frank)); EQ(frank, rank / 2);
        OK(MPI_Allreduce(&one, &tot, 1, MPI_INT, MPI_SUM, fc)); EQ(tot, nm);
        OK(MPI_Comm_free(&fc)); OK(MPI_Group_free(&part)); OK(MPI_Group_free(&wg));
    }

    /* Info on communicators; mpi_recv_req_may_be_empty through dup_with_info. */
    MPI_Info in, got;
    char v[MPI_MAX_INFO_VAL];
    OK(MPI_Info_create(&in));
    OK(MPI_Info_set(in, "mpi_recv_req_may_be_empty", "true"));
    OK(MPI_Info_set(in, "my_hint", "x"));
    MPI_Comm e;
    OK(MPI_Comm_dup_with_info(MPI_COMM_WORLD, in, &e));
    OK(MPI_Comm_get_info(e, &got));
    OK(MPI_Info_get(got, "mpi_recv_req_may_be_empty", MPI_MAX_INFO_VAL - 1, v, &flag)); EQ(flag, 1); TRUE(strcmp(v, "true") == 0);
    OK(MPI_Info_get(got, "my_hint", MPI_MAX_INFO_VAL - 1, v, &flag)); EQ(flag, 1); TRUE(strcmp(v, "x") == 0);
    OK(MPI_Info_free(&got));
    /* idup_with_info: the info is the new communicator's once it exists. */
    MPI_Comm ie;
    OK(MPI_Comm_idup_with_info(MPI_COMM_WORLD, in, &ie, &rq[0]));
    OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
    OK(MPI_Comm_get_info(ie, &got));
    OK(MPI_Info_get(got, "mpi_recv_req_may_be_empty", MPI_MAX_INFO_VAL - 1, v, &flag)); EQ(flag, 1); TRUE(strcmp(v, "true") == 0);
    OK(MPI_Info_get(got, "my_hint", MPI_MAX_INFO_VAL - 1, v, &flag)); EQ(flag, 1);
    OK(MPI_Info_free(&got));
    OK(MPI_Allreduce(&one, &tot, 1, MPI_INT, MPI_SUM, ie)); EQ(tot, size);
    OK(MPI_Comm_free(&ie));
    OK(MPI_Comm_set_info(MPI_COMM_WORLD, in)); /* kept, but the hint cannot change */
    OK(MPI_Comm_get_info(MPI_COMM_WORLD, &got));
    OK(MPI_Info_get(got, "mpi_recv_req_may_be_empty", MPI_MAX_INFO_VAL - 1, v, &flag)); TRUE(strcmp(v, "false") == 0);
    OK(MPI_Info_get(got, "my_hint", MPI_MAX_INFO_VAL - 1, v, &flag)); EQ(flag, 1);
    OK(MPI_Info_free(&got)); OK(MPI_Info_free(&in));
    OK(MPI_Comm_free(&e));

    OK(MPI_Group_free(&world)); OK(MPI_Group_free(&evens)); OK(MPI_Group_free(&odds));
    OK(MPI_Group_free(&rev)); OK(MPI_Group_free(&u)); OK(MPI_Group_free(&diff));
    OK(MPI_Group_free(&inter));

    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) printf("PASS groups\n");
    EQ(self_deleted, 0);
    OK(MPI_Finalize());
    if (self_deleted != 1) { fprintf(stderr, "FAIL: MPI_COMM_SELF's attribute was not deleted at finalize\n"); return 1; }
    return 0;
}
