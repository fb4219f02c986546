/* Communicators: dup, split (incl. MPI_UNDEFINED), compare, names,
 * test_inter, free, MPI_COMM_SELF; traffic on the new communicators. */
#include "check.h"
#include <string.h>

int main(int argc, char **argv) {
    check_init(&argc, &argv);
    int size, rank = check_rank, r = -1, s = -1, res = -1, flag = -1, len = 0;
    char name[MPI_MAX_OBJECT_NAME];
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    OK(MPI_Comm_rank(MPI_COMM_SELF, &r)); EQ(r, 0);
    OK(MPI_Comm_size(MPI_COMM_SELF, &s)); EQ(s, 1);
    OK(MPI_Comm_get_name(MPI_COMM_WORLD, name, &len));
    TRUE(strcmp(name, "MPI_COMM_WORLD") == 0); EQ(len, 14);
    OK(MPI_Comm_get_name(MPI_COMM_SELF, name, &len));
    TRUE(strcmp(name, "MPI_COMM_SELF") == 0);
    OK(MPI_Comm_test_inter(MPI_COMM_WORLD, &flag)); EQ(flag, 0);
    OK(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &res)); EQ(res, MPI_IDENT);
    OK(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_SELF, &res));
    EQ(res, size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL);

    /* dup: congruent, unnamed, separate traffic. */
    MPI_Comm dup;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    TRUE(dup != MPI_COMM_WORLD && dup != MPI_COMM_NULL);
    OK(MPI_Comm_compare(MPI_COMM_WORLD, dup, &res)); EQ(res, MPI_CONGRUENT);
    OK(MPI_Comm_rank(dup, &r)); EQ(r, rank);
    OK(MPI_Comm_get_name(dup, name, &len)); EQ(len, 0);
    OK(MPI_Comm_set_name(dup, "my dup"));
    OK(MPI_Comm_get_name(dup, name, &len));
    TRUE(strcmp(name, "my dup") == 0); EQ(len, 6);
    OK(MPI_Comm_test_inter(dup, &flag)); EQ(flag, 0);
    OK(MPI_Topo_test(MPI_COMM_WORLD, &flag)); EQ(flag, MPI_UNDEFINED);
    OK(MPI_Topo_test(dup, &flag)); EQ(flag, MPI_UNDEFINED);
    /* The same tag on two communicators never crosses. */
    int next = (rank + 1) % size, prev = (rank + size - 1) % size, a = -1, b = -1;
    MPI_Request rq[2];
    OK(MPI_Irecv(&a, 1, MPI_INT, prev, 1, MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Irecv(&b, 1, MPI_INT, prev, 1, dup, &rq[1]));
    int one = 1, two = 2;
    OK(MPI_Send(&two, 1, MPI_INT, next, 1, dup));
    OK(MPI_Send(&one, 1, MPI_INT, next, 1, MPI_COMM_WORLD));
    OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    EQ(a, 1); EQ(b, 2);

    /* split by parity, keys reversing the order. */
    MPI_Comm half;
    OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half));
    int hs = 0, hr = -1;
    OK(MPI_Comm_size(half, &hs)); OK(MPI_Comm_rank(half, &hr));
    int members = (size - rank % 2 + 1) / 2;
    EQ(hs, members);
    EQ(hr, members - 1 - rank / 2);
    int sum = 0;
    OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, half));
    int expect = 0;
    for (int i = rank % 2; i < size; i += 2) expect += i;
    EQ(sum, expect);
    OK(MPI_Comm_compare(half, MPI_COMM_WORLD, &res));
    EQ(res, size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL);

    /* MPI_UNDEFINED: rank 0 gets MPI_COMM_NULL. */
    MPI_Comm some;
    OK(MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 1, 0, &some));
    if (rank == 0) TRUE(some == MPI_COMM_NULL);
    else { OK(MPI_Comm_size(some, &s)); EQ(s, size - 1); OK(MPI_Comm_free(&some)); }

    /* Same members, another order: similar. */
    MPI_Comm rev;
    OK(MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev));
    OK(MPI_Comm_compare(rev, MPI_COMM_WORLD, &res));
    EQ(res, size == 1 ? MPI_CONGRUENT : MPI_SIMILAR);

    OK(MPI_Comm_free(&rev)); TRUE(rev == MPI_COMM_NULL);
    OK(MPI_Comm_free(&half));
    OK(MPI_Comm_free(&dup));
    /* Many create/free cycles reuse the handle slots. */
    for (int i = 0; i < 50; i++) {
        MPI_Comm c;
        OK(MPI_Comm_dup(MPI_COMM_SELF, &c));
        OK(MPI_Comm_free(&c));
    }
    /* A nonblocking collective as a communicator's first never waits for
     * the other members in its call: rank 0 enters it only after every
     * other rank's synchronous send, which they make after theirs. Then
     * blocking collectives on it (the first of which sets up the node
     * layout) and nonblocking ones after that. */
    {
        MPI_Comm fresh;
        MPI_Request r;
        int v = 0, tot = 0;
        OK(MPI_Comm_dup(MPI_COMM_WORLD, &fresh));
        if (rank == 0) {
            for (int i = 1; i < size; i++) OK(MPI_Recv(&v, 1, MPI_INT, i, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            OK(MPI_Iallreduce(&rank, &tot, 1, MPI_INT, MPI_SUM, fresh, &r));
        } else {
            OK(MPI_Iallreduce(&rank, &tot, 1, MPI_INT, MPI_SUM, fresh, &r));
            OK(MPI_Ssend(&rank, 1, MPI_INT, 0, 3, MPI_COMM_WORLD));
        }
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        EQ(tot, size * (size - 1) / 2);
        OK(MPI_Allreduce(&rank, &tot, 1, MPI_INT, MPI_SUM, fresh)); EQ(tot, size * (size - 1) / 2);
        OK(MPI_Ibarrier(fresh, &r)); OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        OK(MPI_Iallreduce(&rank, &tot, 1, MPI_INT, MPI_MAX, fresh, &r)); OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        EQ(tot, size - 1);
        OK(MPI_Comm_free(&fresh));
    }
    check_done("comms");
    return 0;
}
