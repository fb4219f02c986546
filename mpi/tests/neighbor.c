/* neighbor.c: the neighborhood collectives. On a 2-D grid (periodic in
 * dimension 1 only: MPI_PROC_NULL neighbours past dimension 0's edges,
 * whose blocks must be left alone; one or two columns make a rank its own
 * or both neighbours, where blocks pair by direction): allgather(v),
 * alltoall(v/w) blocking, nonblocking (MPI_I...), persistent (..._init,
 * started twice) and the _c forms, alltoallw with a strided datatype and
 * blocks out of order. On a graph ring and a distributed graph whose
 * edges repeat (the k-th message between two ranks lands in the k-th
 * block). Bad input: no topology, MPI_IN_PLACE. */
#include "check.h"
#include <string.h>

static int nbr[4];       /* the grid neighbours: dim 0 -, +, dim 1 -, + */

/* What source i of the grid sent us in an alltoall: its block toward us,
 * which is block i ^ 1 (the opposite direction), as value 100*s + b. */
static int want_a2a(int i, int unset) {
    return nbr[i] == MPI_PROC_NULL ? unset : 100 * nbr[i] + (i ^ 1);
}

static void grid_checks(MPI_Comm cart, int me) {
    int send[4], recv[4];
    for (int j = 0; j < 4; j++) send[j] = 100 * me + j;

    /* alltoall in three forms. */
    for (int j = 0; j < 4; j++) recv[j] = -7;
    OK(MPI_Neighbor_alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, cart));
    for (int i = 0; i < 4; i++) EQ(recv[i], want_a2a(i, -7));
    MPI_Request req;
    for (int j = 0; j < 4; j++) recv[j] = -8;
    OK(MPI_Ineighbor_alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, cart, &req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    for (int i = 0; i < 4; i++) EQ(recv[i], want_a2a(i, -8));
    OK(MPI_Neighbor_alltoall_init(send, 1, MPI_INT, recv, 1, MPI_INT, cart, MPI_INFO_NULL, &req));
    for (int round = 0; round < 2; round++) {
        for (int j = 0; j < 4; j++) { recv[j] = -9; send[j] = 100 * me + j + 1000 * round; }
        OK(MPI_Start(&req));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        for (int i = 0; i < 4; i++)
            EQ(recv[i], nbr[i] == MPI_PROC_NULL ? -9 : want_a2a(i, 0) + 1000 * round);
    }
    OK(MPI_Request_free(&req));
    for (int j = 0; j < 4; j++) send[j] = 100 * me + j;
    for (int j = 0; j < 4; j++) recv[j] = -7;
    OK(MPI_Neighbor_alltoall_c(send, 1, MPI_INT, recv, 1, MPI_INT, cart));
    for (int i = 0; i < 4; i++) EQ(recv[i], want_a2a(i, -7));

    /* allgather: two ints each. */
    int two[2] = {me, -me}, all[8];
    for (int k = 0; k < 8; k++) all[k] = -5;
    OK(MPI_Neighbor_allgather(two, 2, MPI_INT, all, 2, MPI_INT, cart));
    for (int i = 0; i < 4; i++) {
        EQ(all[2 * i], nbr[i] == MPI_PROC_NULL ? -5 : nbr[i]);
        EQ(all[2 * i + 1], nbr[i] == MPI_PROC_NULL ? -5 : -nbr[i]);
    }
    for (int k = 0; k < 8; k++) all[k] = -5;
    OK(MPI_Ineighbor_allgather_c(two, 2, MPI_INT, all, 2, MPI_INT, cart, &req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    for (int i = 0; i < 4; i++) EQ(all[2 * i], nbr[i] == MPI_PROC_NULL ? -5 : nbr[i]);

    /* allgatherv: blocks in reverse order with a gap. */
    int counts[4] = {1, 1, 1, 1}, displs[4] = {6, 4, 2, 0};
    for (int k = 0; k < 8; k++) all[k] = -4;
    OK(MPI_Neighbor_allgatherv(two, 1, MPI_INT, all, counts, displs, MPI_INT, cart));
    for (int i = 0; i < 4; i++) {
        EQ(all[displs[i]], nbr[i] == MPI_PROC_NULL ? -4 : nbr[i]);
        EQ(all[displs[i] + 1], -4);
    }
    OK(MPI_Neighbor_allgatherv_init(two, 1, MPI_INT, all, counts, displs, MPI_INT, cart, MPI_INFO_NULL, &req));
    for (int k = 0; k < 8; k++) all[k] = -3;
    OK(MPI_Start(&req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    OK(MPI_Request_free(&req));
    for (int i = 0; i < 4; i++) EQ(all[displs[i]], nbr[i] == MPI_PROC_NULL ? -3 : nbr[i]);

    /* alltoallv: block j holds j + 1 ints. */
    int sc[4] = {1, 2, 3, 4}, sd[4] = {0, 1, 3, 6}, sbuf[10], rc[4], rd[4], rbuf[10];
    for (int j = 0; j < 4; j++)
        for (int k = 0; k < sc[j]; k++) sbuf[sd[j] + k] = 100 * me + 10 * j + k;
    for (int i = 0; i < 4; i++) rc[i] = (i ^ 1) + 1;  /* what neighbour i sends us */
    rd[0] = 0; for (int i = 1; i < 4; i++) rd[i] = rd[i - 1] + rc[i - 1];
    for (int k = 0; k < 10; k++) rbuf[k] = -2;
    OK(MPI_Ineighbor_alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT, cart, &req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < rc[i]; k++)
            EQ(rbuf[rd[i] + k], nbr[i] == MPI_PROC_NULL ? -2 : 100 * nbr[i] + 10 * (i ^ 1) + k);

    /* alltoallw: a strided type (every other int) on the send side,
     * receive blocks out of order in bytes. */
    MPI_Datatype every_other;
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &every_other));
    OK(MPI_Type_commit(&every_other));
    int wsend[16], wrecv[8], wc[4] = {1, 1, 1, 1}, rcw[4] = {2, 2, 2, 2};
    MPI_Aint wsd[4], wrd[4];
    MPI_Datatype st[4], rt[4];
    for (int j = 0; j < 4; j++) {
        wsd[j] = (MPI_Aint)(4 * j * sizeof(int));
        wrd[j] = (MPI_Aint)(2 * (3 - j) * sizeof(int));
        st[j] = every_other; rt[j] = MPI_INT;
        wsend[4 * j] = 100 * me + j; wsend[4 * j + 1] = -1;
        wsend[4 * j + 2] = -(100 * me + j); wsend[4 * j + 3] = -1;
    }
    for (int k = 0; k < 8; k++) wrecv[k] = -6;
    OK(MPI_Neighbor_alltoallw(wsend, wc, wsd, st, wrecv, rcw, wrd, rt, cart));
    for (int i = 0; i < 4; i++) {
        int *b = wrecv + 2 * (3 - i);
        EQ(b[0], want_a2a(i, -6));
        EQ(b[1], nbr[i] == MPI_PROC_NULL ? -6 : -want_a2a(i, 0));
    }
    OK(MPI_Type_free(&every_other));
}

int main(int argc, char **argv) {
    check_init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    /* No topology, and MPI_IN_PLACE. */
    int x = 0, y[2];
    ERR(MPI_ERR_TOPOLOGY, MPI_Neighbor_allgather(&x, 1, MPI_INT, y, 1, MPI_INT, MPI_COMM_WORLD));

    int dims[2] = {0, 0}, periods[2] = {0, 1};
    OK(MPI_Dims_create(size, 2, dims));
    MPI_Comm cart;
    OK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart));
    OK(MPI_Comm_set_errhandler(cart, MPI_ERRORS_RETURN));
    int me;
    MPI_Comm_rank(cart, &me);
    OK(MPI_Cart_shift(cart, 0, 1, &nbr[0], &nbr[1]));
    OK(MPI_Cart_shift(cart, 1, 1, &nbr[2], &nbr[3]));
    ERR(MPI_ERR_BUFFER, MPI_Neighbor_alltoall(MPI_IN_PLACE, 1, MPI_INT, y, 1, MPI_INT, cart));
    grid_checks(cart, me);
    OK(MPI_Comm_free(&cart));

    /* A graph ring: both neighbours (one when size is 2, none alone). */
    int *index = malloc(sizeof(int) * size), *edges = malloc(sizeof(int) * 2 * size), ne = 0;
    for (int r = 0; r < size; r++) {
        if (size > 1) edges[ne++] = (r + size - 1) % size;
        if (size > 2) edges[ne++] = (r + 1) % size;
        index[r] = ne;
    }
    MPI_Comm graph;
    OK(MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &graph));
    int deg;
    OK(MPI_Graph_neighbors_count(graph, rank, &deg));
    int gnb[2], gout[2] = {-1, -1};
    OK(MPI_Graph_neighbors(graph, rank, 2, gnb));
    OK(MPI_Neighbor_allgather(&rank, 1, MPI_INT, gout, 1, MPI_INT, graph));
    for (int i = 0; i < deg; i++) EQ(gout[i], gnb[i]);
    OK(MPI_Comm_free(&graph));
    free(index); free(edges);

    /* A distributed graph: twice to the right and once to itself, so twice
     * from the left: blocks of 1, 2 and 3 ints in order. */
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int srcs[3] = {left, left, rank}, dsts[3] = {right, right, rank};
    MPI_Comm dg;
    OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 3, srcs, MPI_UNWEIGHTED, 3, dsts,
                                      MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dg));
    int data[6] = {rank, rank + 100, rank + 100, rank + 200, rank + 200, rank + 200};
    int cnt[3] = {1, 2, 3}, dsp[3] = {0, 1, 3}, out[6];
    MPI_Count ccnt[3] = {1, 2, 3};
    MPI_Aint cdsp[3] = {0, 1, 3};
    for (int k = 0; k < 6; k++) out[k] = -1;
    OK(MPI_Neighbor_alltoallv(data, cnt, dsp, MPI_INT, out, cnt, dsp, MPI_INT, dg));
    int want[6] = {left, left + 100, left + 100, rank + 200, rank + 200, rank + 200};
    for (int k = 0; k < 6; k++) EQ(out[k], want[k]);
    for (int k = 0; k < 6; k++) out[k] = -1;
    OK(MPI_Neighbor_alltoallv_c(data, ccnt, cdsp, MPI_INT, out, ccnt, cdsp, MPI_INT, dg));
    for (int k = 0; k < 6; k++) EQ(out[k], want[k]);
    MPI_Request req;
    OK(MPI_Neighbor_alltoallw_init(data, cnt, (MPI_Aint[]){0, 4, 12}, (MPI_Datatype[]){MPI_INT, MPI_INT, MPI_INT},
                                   out, cnt, (MPI_Aint[]){0, 4, 12}, (MPI_Datatype[]){MPI_INT, MPI_INT, MPI_INT},
                                   dg, MPI_INFO_NULL, &req));
    for (int k = 0; k < 6; k++) out[k] = -1;
    OK(MPI_Start(&req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    OK(MPI_Request_free(&req));
    for (int k = 0; k < 6; k++) EQ(out[k], want[k]);
    int in3[3];
    OK(MPI_Neighbor_alltoall(data + 3, 1, MPI_INT, in3, 1, MPI_INT, dg));
    EQ(in3[0], left + 200); EQ(in3[1], left + 200); EQ(in3[2], rank + 200);
    OK(MPI_Comm_free(&dg));

    check_done("neighbor");
    return 0;
}
