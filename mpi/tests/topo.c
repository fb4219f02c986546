/* topo.c: process topologies. Cartesian grids (create with and without
 * reorder, get, coords, rank with periodic wrap, shift with MPI_PROC_NULL
 * past a non-periodic edge, sub, dim_get, map, Topo_test, a dup keeps its
 * topology, ranks beyond the grid get MPI_COMM_NULL), graphs (a ring:
 * neighbours, get, dims, map), distributed graphs (adjacent with weights,
 * and MPI_Dist_graph_create with every edge given by rank 0,
 * MPI_UNWEIGHTED), and bad input with the standard's error classes. */
#include "check.h"

int main(int argc, char **argv) {
    check_init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int status;
    OK(MPI_Topo_test(MPI_COMM_WORLD, &status));
    EQ(status, MPI_UNDEFINED);

    /* A 2-D grid of every rank, periodic in dimension 1 only. */
    int dims[2] = {0, 0}, periods[2] = {0, 1};
    OK(MPI_Dims_create(size, 2, dims));
    for (int reorder = 0; reorder < 2; reorder++) {
        MPI_Comm cart;
        OK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, reorder, &cart));
        TRUE(cart != MPI_COMM_NULL);
        int crank, nd, d[2], p[2], c[2], r;
        MPI_Comm_rank(cart, &crank);
        OK(MPI_Topo_test(cart, &status)); EQ(status, MPI_CART);
        OK(MPI_Cartdim_get(cart, &nd)); EQ(nd, 2);
        OK(MPI_Cart_get(cart, 2, d, p, c));
        EQ(d[0], dims[0]); EQ(d[1], dims[1]); EQ(p[0], 0); EQ(p[1], 1);
        EQ(c[0], crank / dims[1]); EQ(c[1], crank % dims[1]);
        OK(MPI_Cart_rank(cart, c, &r)); EQ(r, crank);
        int cc[2];
        for (int q = 0; q < size; q++) {
            OK(MPI_Cart_coords(cart, q, 2, cc));
            OK(MPI_Cart_rank(cart, cc, &r)); EQ(r, q);
        }
        /* Periodic wrap in dimension 1: one past the end is column 0. */
        cc[0] = c[0]; cc[1] = c[1] + dims[1];
        OK(MPI_Cart_rank(cart, cc, &r)); EQ(r, crank);
        int src, dst;
        OK(MPI_Cart_shift(cart, 1, 1, &src, &dst));
        EQ(dst, c[0] * dims[1] + (c[1] + 1) % dims[1]);
        EQ(src, c[0] * dims[1] + (c[1] + dims[1] - 1) % dims[1]);
        OK(MPI_Cart_shift(cart, 0, 1, &src, &dst));
        EQ(dst, c[0] + 1 < dims[0] ? crank + dims[1] : MPI_PROC_NULL);
        EQ(src, c[0] > 0 ? crank - dims[1] : MPI_PROC_NULL);
        /* The shift's neighbours exchange. */
        int got = -1;
        OK(MPI_Sendrecv(&crank, 1, MPI_INT, dst, 5, &got, 1, MPI_INT, src, 5, cart, MPI_STATUS_IGNORE));
        EQ(got, src == MPI_PROC_NULL ? -1 : src);
        /* Rows: dimension 1 kept. */
        int remain[2] = {0, 1};
        MPI_Comm row;
        OK(MPI_Cart_sub(cart, remain, &row));
        int rsize, rrank;
        MPI_Comm_size(row, &rsize); MPI_Comm_rank(row, &rrank);
        EQ(rsize, dims[1]); EQ(rrank, c[1]);
        OK(MPI_Cartdim_get(row, &nd)); EQ(nd, 1);
        int sum = 0;
        OK(MPI_Allreduce(&crank, &sum, 1, MPI_INT, MPI_SUM, row));
        EQ(sum, c[0] * dims[1] * dims[1] + dims[1] * (dims[1] - 1) / 2);
        OK(MPI_Comm_free(&row));
        /* A dup keeps the topology. */
        MPI_Comm dup;
        OK(MPI_Comm_dup(cart, &dup));
        OK(MPI_Topo_test(dup, &status)); EQ(status, MPI_CART);
        OK(MPI_Cart_get(dup, 2, d, p, c)); EQ(d[0], dims[0]);
        OK(MPI_Comm_free(&dup));
        OK(MPI_Comm_free(&cart));
    }
    /* A 1-D grid smaller than the world: the others get MPI_COMM_NULL. */
    if (size > 1) {
        int n = size - 1, per = 1;
        MPI_Comm small;
        OK(MPI_Cart_create(MPI_COMM_WORLD, 1, &n, &per, 0, &small));
        TRUE((rank < n) == (small != MPI_COMM_NULL));
        int mapped;
        OK(MPI_Cart_map(MPI_COMM_WORLD, 1, &n, &per, &mapped));
        EQ(mapped, rank < n ? rank : MPI_UNDEFINED);
        if (small != MPI_COMM_NULL) OK(MPI_Comm_free(&small));
    }

    /* A ring as a graph. */
    {
        int *index = malloc(size * sizeof(int)), *edges = malloc(2 * size * sizeof(int));
        for (int i = 0; i < size; i++) {
            index[i] = 2 * (i + 1);
            edges[2 * i] = (i + size - 1) % size;
            edges[2 * i + 1] = (i + 1) % size;
        }
        MPI_Comm g;
        OK(MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &g));
        OK(MPI_Topo_test(g, &status)); EQ(status, MPI_GRAPH);
        int nn, ne, cnt, nb[2];
        OK(MPI_Graphdims_get(g, &nn, &ne)); EQ(nn, size); EQ(ne, 2 * size);
        OK(MPI_Graph_neighbors_count(g, rank, &cnt)); EQ(cnt, 2);
        OK(MPI_Graph_neighbors(g, rank, 2, nb));
        EQ(nb[0], (rank + size - 1) % size); EQ(nb[1], (rank + 1) % size);
        int *i2 = malloc(size * sizeof(int)), *e2 = malloc(2 * size * sizeof(int));
        OK(MPI_Graph_get(g, size, 2 * size, i2, e2));
        for (int i = 0; i < size; i++) { EQ(i2[i], index[i]); EQ(e2[2 * i + 1], edges[2 * i + 1]); }
        int mapped;
        OK(MPI_Graph_map(MPI_COMM_WORLD, size, index, edges, &mapped)); EQ(mapped, rank);
        OK(MPI_Comm_free(&g));
        free(index); free(edges); free(i2); free(e2);
    }

    /* Distributed graphs: a weighted ring given adjacently, then the same
     * ring, unweighted, with every edge given by rank 0. */
    {
        int prev = (rank + size - 1) % size, next = (rank + 1) % size;
        int srcw = 10 + prev, dstw = 10 + rank;
        MPI_Comm dg;
        OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &prev, &srcw, 1, &next, &dstw, MPI_INFO_NULL, 0, &dg));
        OK(MPI_Topo_test(dg, &status)); EQ(status, MPI_DIST_GRAPH);
        int in, out, weighted;
        OK(MPI_Dist_graph_neighbors_count(dg, &in, &out, &weighted));
        EQ(in, 1); EQ(out, 1); EQ(weighted, 1);
        int s, sw, d, dw;
        OK(MPI_Dist_graph_neighbors(dg, 1, &s, &sw, 1, &d, &dw));
        EQ(s, prev); EQ(sw, 10 + prev); EQ(d, next); EQ(dw, 10 + rank);
        OK(MPI_Comm_free(&dg));

        int *srcs = malloc(size * sizeof(int)), *degs = malloc(size * sizeof(int)), *dsts = malloc(size * sizeof(int));
        for (int i = 0; i < size; i++) { srcs[i] = i; degs[i] = 1; dsts[i] = (i + 1) % size; }
        OK(MPI_Dist_graph_create(MPI_COMM_WORLD, rank == 0 ? size : 0, srcs, degs, dsts, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dg));
        OK(MPI_Dist_graph_neighbors_count(dg, &in, &out, &weighted));
        EQ(in, 1); EQ(out, 1); EQ(weighted, 0);
        OK(MPI_Dist_graph_neighbors(dg, 1, &s, MPI_UNWEIGHTED, 1, &d, MPI_UNWEIGHTED));
        EQ(s, prev); EQ(d, next);
        OK(MPI_Comm_free(&dg));
        free(srcs); free(degs); free(dsts);
    }

    /* Bad input: the standard's classes, nothing crashes. */
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    {
        MPI_Comm bad = MPI_COMM_NULL;
        int zero[2] = {0, 1}, big = size + 1, per = 0, d[2], p[2], c[2], r, x;
        ERR(MPI_ERR_DIMS, MPI_Cart_create(MPI_COMM_WORLD, 2, zero, periods, 0, &bad));
        ERR(MPI_ERR_ARG, MPI_Cart_create(MPI_COMM_WORLD, 1, &big, &per, 0, &bad));
        ERR(MPI_ERR_TOPOLOGY, MPI_Cart_get(MPI_COMM_WORLD, 2, d, p, c));
        ERR(MPI_ERR_TOPOLOGY, MPI_Graphdims_get(MPI_COMM_WORLD, &r, &x));
        int n = size;
        MPI_Comm line;
        OK(MPI_Cart_create(MPI_COMM_WORLD, 1, &n, &per, 0, &line));
        OK(MPI_Comm_set_errhandler(line, MPI_ERRORS_RETURN));
        int past = size;
        ERR(MPI_ERR_ARG, MPI_Cart_rank(line, &past, &r));
        ERR(MPI_ERR_ARG, MPI_Cart_shift(line, 1, 1, &r, &x));
        ERR(MPI_ERR_RANK, MPI_Cart_coords(line, size, 1, c));
        OK(MPI_Comm_free(&line));
        int index = 1, edge = size;
        ERR(MPI_ERR_ARG, MPI_Graph_create(MPI_COMM_WORLD, 1, &index, &edge, 0, &bad));
        int out_of_range = size + 3, w = 1;
        ERR(MPI_ERR_RANK, MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &out_of_range, &w, 0, NULL, MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &bad));
        TRUE(bad == MPI_COMM_NULL);
    }
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    check_done("topo");
}
