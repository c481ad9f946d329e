/* Process topologies and neighbourhood collectives: a periodic 2-D grid (coordinates,
 * ranks, shifts, sub-grids), dims_create, a ring as a graph and as a distributed graph
 * (with weights), topo_test, and every neighbourhood collective in its blocking,
 * nonblocking and persistent forms checked against the neighbours' ranks; argument errors. */
#include <string.h>
#include "check.h"

/* The neighbourhood collectives over `c`, whose in- and out-neighbours are `in`/`out`. */
static void neighbors(MPI_Comm c, int me, int nin, const int *in, int nout) {
    int rb[32], rv[64], counts[16], displs[16], sb[32];
    MPI_Request r;
    /* allgather: every in-neighbour's rank, in order. */
    for (int form = 0; form < 3; form++) {
        for (int i = 0; i < 32; i++) rb[i] = -1;
        if (form == 0) {
            MUST(MPI_Neighbor_allgather(&me, 1, MPI_INT, rb, 1, MPI_INT, c));
        } else if (form == 1) {
            MUST(MPI_Ineighbor_allgather(&me, 1, MPI_INT, rb, 1, MPI_INT, c, &r));
            MUST(MPI_Wait(&r, MPI_STATUS_IGNORE));
        } else {
            MUST(MPI_Neighbor_allgather_init(&me, 1, MPI_INT, rb, 1, MPI_INT, c, MPI_INFO_NULL, &r));
            for (int k = 0; k < 2; k++) {
                MUST(MPI_Start(&r));
                MUST(MPI_Wait(&r, MPI_STATUS_IGNORE));
            }
            MUST(MPI_Request_free(&r));
        }
        for (int i = 0; i < nin; i++)
            CHECK(rb[i] == (in[i] == MPI_PROC_NULL ? -1 : in[i]), "allgather form %d block %d: %d", form, i, rb[i]);
    }
    /* alltoall: block j to out-neighbour j holds 100*me + j. */
    for (int j = 0; j < nout; j++) sb[j] = 100 * me + j;
    for (int form = 0; form < 3; form++) {
        for (int i = 0; i < 32; i++) rb[i] = -1;
        if (form == 0) {
            MUST(MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, c));
        } else if (form == 1) {
            MUST(MPI_Ineighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, c, &r));
            MUST(MPI_Wait(&r, MPI_STATUS_IGNORE));
        } else {
            MUST(MPI_Neighbor_alltoall_init(sb, 1, MPI_INT, rb, 1, MPI_INT, c, MPI_INFO_NULL, &r));
            MUST(MPI_Start(&r));
            MUST(MPI_Wait(&r, MPI_STATUS_IGNORE));
            MUST(MPI_Request_free(&r));
        }
        for (int i = 0; i < nin; i++) CHECK(in[i] == MPI_PROC_NULL ? rb[i] == -1 : rb[i] / 100 == in[i], "alltoall form %d block %d: %d", form, i, rb[i]);
    }
    /* allgatherv at reversed displacements, two elements each. */
    int two[2] = {me, me};
    for (int i = 0; i < nin; i++) { counts[i] = 2; displs[i] = 2 * (nin - 1 - i); }
    for (int form = 0; form < 3; form++) {
        for (int i = 0; i < 64; i++) rv[i] = -1;
        if (form == 0) {
            MUST(MPI_Neighbor_allgatherv(two, 2, MPI_INT, rv, counts, displs, MPI_INT, c));
        } else if (form == 1) {
            MUST(MPI_Ineighbor_allgatherv(two, 2, MPI_INT, rv, counts, displs, MPI_INT, c, &r));
            MUST(MPI_Wait(&r, MPI_STATUS_IGNORE));
        } else {
            MUST(MPI_Neighbor_allgatherv_init(two, 2, MPI_INT, rv, counts, displs, MPI_INT, c, MPI_INFO_NULL, &r));
            MUST(MPI_Start(&r));
            MUST(MPI_Wait(&r, MPI_STATUS_IGNORE));
            MUST(MPI_Request_free(&r));
        }
        for (int i = 0; i < nin; i++)
            if (in[i] != MPI_PROC_NULL)
                CHECK(rv[displs[i]] == in[i] && rv[displs[i] + 1] == in[i], "allgatherv form %d %d", form, i);
    }
    /* alltoallv and alltoallw: one int per neighbour. */
    int ones[16], sd[16], rd[16];
    MPI_Aint sdw[16], rdw[16];
    MPI_Datatype ts[16];
    for (int j = 0; j < 16; j++) {
        ones[j] = 1; sd[j] = j; rd[j] = j; sdw[j] = (MPI_Aint)(j * sizeof(int));
        rdw[j] = (MPI_Aint)(j * sizeof(int)); ts[j] = MPI_INT;
    }
    for (int form = 0; form < 6; form++) {
        for (int i = 0; i < 32; i++) rb[i] = -1;
        switch (form) {
        case 0: MUST(MPI_Neighbor_alltoallv(sb, ones, sd, MPI_INT, rb, ones, rd, MPI_INT, c)); break;
        case 1: MUST(MPI_Ineighbor_alltoallv(sb, ones, sd, MPI_INT, rb, ones, rd, MPI_INT, c, &r));
                MUST(MPI_Wait(&r, MPI_STATUS_IGNORE)); break;
        case 2: MUST(MPI_Neighbor_alltoallv_init(sb, ones, sd, MPI_INT, rb, ones, rd, MPI_INT, c, MPI_INFO_NULL, &r));
                MUST(MPI_Start(&r)); MUST(MPI_Wait(&r, MPI_STATUS_IGNORE)); MUST(MPI_Request_free(&r)); break;
        case 3: MUST(MPI_Neighbor_alltoallw(sb, ones, sdw, ts, rb, ones, rdw, ts, c)); break;
        case 4: MUST(MPI_Ineighbor_alltoallw(sb, ones, sdw, ts, rb, ones, rdw, ts, c, &r));
                MUST(MPI_Wait(&r, MPI_STATUS_IGNORE)); break;
        default: MUST(MPI_Neighbor_alltoallw_init(sb, ones, sdw, ts, rb, ones, rdw, ts, c, MPI_INFO_NULL, &r));
                MUST(MPI_Start(&r)); MUST(MPI_Wait(&r, MPI_STATUS_IGNORE)); MUST(MPI_Request_free(&r)); break;
        }
        for (int i = 0; i < nin; i++) CHECK(in[i] == MPI_PROC_NULL ? rb[i] == -1 : rb[i] / 100 == in[i], "alltoallv/w form %d block %d: %d", form, i, rb[i]);
    }
}

int main(int argc, char **argv) {
    int rank, size;
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));

    /* dims_create */
    int dims[2] = {0, 0};
    MUST(MPI_Dims_create(size, 2, dims));
    CHECK(dims[0] * dims[1] == size && dims[0] >= dims[1], "dims_create %d x %d", dims[0], dims[1]);
    int d3[3] = {0, 2, 0};
    MUST(MPI_Dims_create(4 * 2, 3, d3));
    CHECK(d3[1] == 2 && d3[0] * d3[2] == 4, "dims_create fixed %d %d %d", d3[0], d3[1], d3[2]);

    /* A 2-D grid, periodic in the first dimension only. */
    int periods[2] = {1, 0};
    MPI_Comm cart;
    MUST(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart));
    int kind;
    MUST(MPI_Topo_test(cart, &kind));
    CHECK(kind == MPI_CART, "topo_test cart %d", kind);
    MUST(MPI_Topo_test(MPI_COMM_WORLD, &kind));
    CHECK(kind == MPI_UNDEFINED, "topo_test world %d", kind);
    int nd, gd[2], gp[2], gc[2], me;
    MUST(MPI_Cartdim_get(cart, &nd));
    CHECK(nd == 2, "cartdim %d", nd);
    MUST(MPI_Comm_rank(cart, &me));
    MUST(MPI_Cart_get(cart, 2, gd, gp, gc));
    CHECK(gd[0] == dims[0] && gd[1] == dims[1] && gp[0] == 1 && gp[1] == 0, "cart_get");
    CHECK(gc[0] == me / dims[1] && gc[1] == me % dims[1], "cart_get coords (row-major)");
    int cc[2], rr;
    MUST(MPI_Cart_coords(cart, me, 2, cc));
    MUST(MPI_Cart_rank(cart, cc, &rr));
    CHECK(rr == me, "cart_rank(cart_coords) %d", rr);
    int src, dst;
    MUST(MPI_Cart_shift(cart, 0, 1, &src, &dst));
    CHECK(dst == ((cc[0] + 1) % dims[0]) * dims[1] + cc[1], "shift periodic dest %d", dst);
    CHECK(src == ((cc[0] + dims[0] - 1) % dims[0]) * dims[1] + cc[1], "shift periodic source %d", src);
    MUST(MPI_Cart_shift(cart, 1, 1, &src, &dst));
    CHECK(dst == (cc[1] + 1 < dims[1] ? me + 1 : MPI_PROC_NULL), "shift edge dest %d", dst);
    CHECK(src == (cc[1] > 0 ? me - 1 : MPI_PROC_NULL), "shift edge source %d", src);
    int remain[2] = {0, 1};
    MPI_Comm row;
    MUST(MPI_Cart_sub(cart, remain, &row));
    int rsize, rrank;
    MUST(MPI_Comm_size(row, &rsize));
    MUST(MPI_Comm_rank(row, &rrank));
    CHECK(rsize == dims[1] && rrank == cc[1], "cart_sub %d %d", rsize, rrank);
    int nr;
    MUST(MPI_Cart_map(MPI_COMM_WORLD, 2, dims, periods, &nr));
    CHECK(nr == rank, "cart_map %d", nr);
    /* Cartesian neighbours: for each dimension the negative, then the positive one. */
    int cin[4];
    MUST(MPI_Cart_shift(cart, 0, 1, &cin[0], &cin[1]));
    MUST(MPI_Cart_shift(cart, 1, 1, &cin[2], &cin[3]));
    neighbors(cart, me, 4, cin, 4);
    MUST(MPI_Comm_free(&row));
    MUST(MPI_Comm_free(&cart));

    /* A ring as a graph. */
    int index[16], edges[32];
    for (int i = 0; i < size; i++) {
        index[i] = 2 * (i + 1);
        edges[2 * i] = (i + size - 1) % size;
        edges[2 * i + 1] = (i + 1) % size;
    }
    MPI_Comm graph;
    MUST(MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &graph));
    MUST(MPI_Topo_test(graph, &kind));
    CHECK(kind == MPI_GRAPH, "topo_test graph");
    int nn, ne, gi[16], ge[32], cnt, nb[4];
    MUST(MPI_Graphdims_get(graph, &nn, &ne));
    CHECK(nn == size && ne == 2 * size, "graphdims %d %d", nn, ne);
    MUST(MPI_Graph_get(graph, 16, 32, gi, ge));
    CHECK(memcmp(gi, index, (size_t)size * sizeof(int)) == 0 && memcmp(ge, edges, (size_t)ne * sizeof(int)) == 0, "graph_get");
    MUST(MPI_Graph_neighbors_count(graph, rank, &cnt));
    CHECK(cnt == 2, "graph_neighbors_count %d", cnt);
    MUST(MPI_Graph_neighbors(graph, rank, 4, nb));
    CHECK(nb[0] == edges[2 * rank] && nb[1] == edges[2 * rank + 1], "graph_neighbors");
    MUST(MPI_Graph_map(MPI_COMM_WORLD, size, index, edges, &nr));
    CHECK(nr == rank, "graph_map %d", nr);
    neighbors(graph, rank, 2, nb, 2);
    MUST(MPI_Comm_free(&graph));

    /* The ring as a distributed graph: from the left, to the right, weighted. */
    int left = (rank + size - 1) % size, right = (rank + 1) % size, w1 = 5, w2 = 7;
    MPI_Comm dg;
    MUST(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &left, &w1, 1, &right, &w2,
                                        MPI_INFO_NULL, 0, &dg));
    MUST(MPI_Topo_test(dg, &kind));
    CHECK(kind == MPI_DIST_GRAPH, "topo_test dist graph");
    int indeg, outdeg, weighted, s[2], sw[2], t[2], tw[2];
    MUST(MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted));
    CHECK(indeg == 1 && outdeg == 1 && weighted, "dist_graph_neighbors_count");
    MUST(MPI_Dist_graph_neighbors(dg, 2, s, sw, 2, t, tw));
    CHECK(s[0] == left && sw[0] == 5 && t[0] == right && tw[0] == 7, "dist_graph_neighbors");
    neighbors(dg, rank, 1, &left, 1);
    MUST(MPI_Comm_free(&dg));
    /* Each rank names the edge to its right; unweighted. */
    int one = 1;
    MUST(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &rank, &one, &right, MPI_UNWEIGHTED,
                               MPI_INFO_NULL, 0, &dg));
    MUST(MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted));
    CHECK(indeg == 1 && outdeg == 1 && !weighted, "dist_graph_create counts %d %d %d", indeg, outdeg, weighted);
    MUST(MPI_Dist_graph_neighbors(dg, 1, s, MPI_UNWEIGHTED, 1, t, MPI_UNWEIGHTED));
    CHECK(s[0] == left && t[0] == right, "dist_graph_create neighbours");
    neighbors(dg, rank, 1, &left, 1);
    MUST(MPI_Comm_free(&dg));

    /* Errors. */
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int cls, x = 0;
    cls = MPI_Cartdim_get(MPI_COMM_WORLD, &nd);
    MUST(MPI_Error_class(cls, &cls));
    CHECK(cls == MPI_ERR_TOPOLOGY, "cartdim without topology: %d", cls);
    cls = MPI_Neighbor_allgather(&x, 1, MPI_INT, &x, 1, MPI_INT, MPI_COMM_WORLD);
    MUST(MPI_Error_class(cls, &cls));
    CHECK(cls == MPI_ERR_TOPOLOGY, "neighbor_allgather without topology: %d", cls);
    int bad[2] = {size + 1, 1};
    cls = MPI_Cart_create(MPI_COMM_WORLD, 2, bad, periods, 0, &cart);
    MUST(MPI_Error_class(cls, &cls));
    CHECK(cls == MPI_ERR_DIMS || cls == MPI_ERR_ARG, "cart too big: %d", cls);
    cls = MPI_Dims_create(size, -1, dims);
    MUST(MPI_Error_class(cls, &cls));
    CHECK(cls == MPI_ERR_COUNT || cls == MPI_ERR_DIMS || cls == MPI_ERR_ARG, "dims_create negative: %d", cls);
    cls = MPI_Topo_test(MPI_COMM_NULL, &kind);
    MUST(MPI_Error_class(cls, &cls));
    CHECK(cls == MPI_ERR_COMM, "topo_test null comm: %d", cls);
    MUST(MPI_Finalize());
    return 0;
}
