/* Derived datatypes: every constructor's size, extent and true extent;
 * names, dup, commit, free; Pack/Unpack/Pack_size; sends and receives of
 * non-contiguous types (blocking, nonblocking, persistent, matched probe,
 * Sendrecv_replace), truncation, Get_count/Get_elements; MPI_BOTTOM with
 * absolute addresses; Pack_external/Unpack_external/Pack_external_size. */
#include "check.h"
#include <stddef.h>
#include <string.h>

#define N 10

static void extent_is(MPI_Datatype t, MPI_Aint lb, MPI_Aint ext, MPI_Aint tlb, MPI_Aint text, int size) {
    MPI_Aint l, e;
    int s;
    OK(MPI_Type_get_extent(t, &l, &e)); EQ(l, lb); EQ(e, ext);
    OK(MPI_Type_get_true_extent(t, &l, &e)); EQ(l, tlb); EQ(e, text);
    OK(MPI_Type_size(t, &s)); EQ(s, size);
}

struct particle { double x; int id; char tag; };

int main(int argc, char **argv) {
    check_init(&argc, &argv);
    int size, rank = check_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Status st;
    int count = -1;
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));

    /* Constructors and their bounds. */
    MPI_Datatype contig, vec, hvec, idx, hidx, blk, hblk, strct, rsz, dup;
    OK(MPI_Type_contiguous(3, MPI_INT, &contig));
    extent_is(contig, 0, 12, 0, 12, 12);
    OK(MPI_Type_vector(3, 2, 4, MPI_INT, &vec));          /* ints 0,1 4,5 8,9 */
    extent_is(vec, 0, 40, 0, 40, 24);
    OK(MPI_Type_create_hvector(2, 1, 24, MPI_DOUBLE, &hvec));
    extent_is(hvec, 0, 32, 0, 32, 16);
    int lens[3] = {1, 2, 1}, disps[3] = {5, 0, 9};
    OK(MPI_Type_indexed(3, lens, disps, MPI_INT, &idx));  /* ints 5, 0,1, 9 */
    extent_is(idx, 0, 40, 0, 40, 16);
    MPI_Aint hdisps[2] = {16, -8};
    int hlens[2] = {1, 1};
    OK(MPI_Type_create_hindexed(2, hlens, hdisps, MPI_DOUBLE, &hidx));
    extent_is(hidx, -8, 32, -8, 32, 16);
    int bdisps[2] = {3, 1};
    OK(MPI_Type_create_indexed_block(2, 2, bdisps, MPI_SHORT, &blk)); /* shorts 3,4 1,2 */
    extent_is(blk, 2, 8, 2, 8, 8);
    MPI_Aint hbdisps[2] = {0, 10};
    OK(MPI_Type_create_hindexed_block(2, 1, hbdisps, MPI_CHAR, &hblk));
    extent_is(hblk, 0, 11, 0, 11, 2);
    int slens[3] = {1, 1, 1};
    MPI_Aint sdisps[3] = {offsetof(struct particle, x), offsetof(struct particle, id), offsetof(struct particle, tag)};
    MPI_Datatype stypes[3] = {MPI_DOUBLE, MPI_INT, MPI_CHAR};
    OK(MPI_Type_create_struct(3, slens, sdisps, stypes, &strct));
    extent_is(strct, 0, sizeof(struct particle), 0, offsetof(struct particle, tag) + 1, 13);
    OK(MPI_Type_create_resized(vec, -4, 48, &rsz));
    extent_is(rsz, -4, 48, 0, 40, 24);
    OK(MPI_Type_dup(strct, &dup));
    extent_is(dup, 0, sizeof(struct particle), 0, 13, 13);
    MPI_Count sx, lbx, exx;
    OK(MPI_Type_size_x(vec, &sx)); EQ(sx, 24);
    OK(MPI_Type_get_extent_x(rsz, &lbx, &exx)); EQ(lbx, -4); EQ(exx, 48);

    /* Names. */
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    OK(MPI_Type_get_name(vec, name, &len)); EQ(len, 0);
    OK(MPI_Type_set_name(vec, "column"));
    OK(MPI_Type_get_name(vec, name, &len)); TRUE(strcmp(name, "column") == 0); EQ(len, 6);
    OK(MPI_Type_get_name(MPI_DOUBLE, name, &len)); TRUE(strcmp(name, "MPI_DOUBLE") == 0);

    /* Uncommitted types cannot communicate; predefined ones cannot be freed. */
    int ibuf[64] = {0};
    ERR(MPI_ERR_TYPE, MPI_Send(ibuf, 1, vec, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
    MPI_Datatype pre = MPI_INT;
    ERR(MPI_ERR_TYPE, MPI_Type_free(&pre));
    MPI_Datatype all[10] = {contig, vec, hvec, idx, hidx, blk, hblk, strct, rsz, dup};
    for (int i = 0; i < 10; i++) OK(MPI_Type_commit(&all[i]));
    OK(MPI_Type_commit(&pre)); /* predefined: already committed */

    /* Pack / Unpack of the vector and the struct. */
    {
        int src[20], dst[20];
        for (int i = 0; i < 20; i++) { src[i] = i; dst[i] = -1; }
        char packed[256];
        int pos = 0, psize = -1;
        OK(MPI_Pack_size(2, vec, MPI_COMM_WORLD, &psize)); EQ(psize, 48);
        OK(MPI_Pack(src, 1, vec, packed, sizeof packed, &pos, MPI_COMM_WORLD)); EQ(pos, 24);
        OK(MPI_Pack(src, 1, idx, packed, sizeof packed, &pos, MPI_COMM_WORLD)); EQ(pos, 40);
        int *p = (int *)packed;
        int want[10] = {0, 1, 4, 5, 8, 9, 5, 0, 1, 9};
        for (int i = 0; i < 10; i++) EQ(p[i], want[i]);
        pos = 0;
        OK(MPI_Unpack(packed, 40, &pos, dst, 1, vec, MPI_COMM_WORLD)); EQ(pos, 24);
        EQ(dst[0], 0); EQ(dst[1], 1); EQ(dst[2], -1); EQ(dst[4], 4); EQ(dst[9], 9); EQ(dst[10], -1);
        ERR(MPI_ERR_TRUNCATE, MPI_Unpack(packed, 40, &pos, dst, 2, idx, MPI_COMM_WORLD));
        ERR(MPI_ERR_TRUNCATE, MPI_Pack(src, 10, vec, packed, 100, &pos, MPI_COMM_WORLD));
        struct particle pa[2] = {{1.5, 7, 'a'}, {2.5, 8, 'b'}}, pb[2];
        memset(pb, 0, sizeof pb);
        pos = 0;
        OK(MPI_Pack(pa, 2, strct, packed, sizeof packed, &pos, MPI_COMM_WORLD)); EQ(pos, 26);
        pos = 0;
        OK(MPI_Unpack(packed, 26, &pos, pb, 2, strct, MPI_COMM_WORLD));
        TRUE(pb[1].x == 2.5); EQ(pb[1].id, 8); EQ(pb[1].tag, 'b'); EQ(pb[0].tag, 'a');
    }

    /* Around the ring: a vector (a matrix column) sent as contiguous ints,
     * received as a column, and a struct array, every way. */
    for (int way = 0; way < 5; way++) {
        int mat[N][4], col[N];
        for (int i = 0; i < N; i++) for (int j = 0; j < 4; j++) mat[i][j] = rank * 1000 + i * 10 + j;
        for (int i = 0; i < N; i++) col[i] = -1;
        MPI_Datatype column;
        OK(MPI_Type_vector(N, 1, 4, MPI_INT, &column));
        OK(MPI_Type_commit(&column));
        int recvd[N][4];
        memset(recvd, 0xff, sizeof recvd);
        MPI_Request r[2];
        switch (way) {
        case 0: /* blocking: column out, contiguous in */
            OK(MPI_Sendrecv(&mat[0][2], 1, column, next, 1, col, N, MPI_INT, prev, 1, MPI_COMM_WORLD, &st));
            for (int i = 0; i < N; i++) EQ(col[i], prev * 1000 + i * 10 + 2);
            break;
        case 1: /* nonblocking: contiguous out, column in */
            for (int i = 0; i < N; i++) col[i] = rank * 1000 + i;
            OK(MPI_Irecv(&recvd[0][1], 1, column, prev, 2, MPI_COMM_WORLD, &r[0]));
            OK(MPI_Isend(col, N, MPI_INT, next, 2, MPI_COMM_WORLD, &r[1]));
            OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
            for (int i = 0; i < N; i++) { EQ(recvd[i][1], prev * 1000 + i); EQ(recvd[i][0], -1); }
            break;
        case 2: /* persistent, column to column, 3 rounds */
            OK(MPI_Recv_init(&recvd[0][3], 1, column, prev, 3, MPI_COMM_WORLD, &r[0]));
            OK(MPI_Send_init(&mat[0][0], 1, column, next, 3, MPI_COMM_WORLD, &r[1]));
            for (int round = 0; round < 3; round++) {
                for (int i = 0; i < N; i++) mat[i][0] = rank * 1000 + round * 100 + i;
                OK(MPI_Startall(2, r));
                OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
                for (int i = 0; i < N; i++) EQ(recvd[i][3], prev * 1000 + round * 100 + i);
            }
            OK(MPI_Request_free(&r[0])); OK(MPI_Request_free(&r[1]));
            break;
        case 3: /* matched probe into a column */
            OK(MPI_Send(&mat[0][1], 1, column, next, 4, MPI_COMM_WORLD));
            {
                MPI_Message m;
                OK(MPI_Mprobe(prev, 4, MPI_COMM_WORLD, &m, &st));
                OK(MPI_Get_count(&st, column, &count)); EQ(count, 1);
                OK(MPI_Get_count(&st, MPI_INT, &count)); EQ(count, N);
                OK(MPI_Mrecv(&recvd[0][0], 1, column, &m, &st));
                for (int i = 0; i < N; i++) EQ(recvd[i][0], prev * 1000 + i * 10 + 1);
            }
            break;
        case 4: /* Sendrecv_replace on the column itself */
            OK(MPI_Sendrecv_replace(&mat[0][2], 1, column, next, 5, prev, 5, MPI_COMM_WORLD, &st));
            for (int i = 0; i < N; i++) { EQ(mat[i][2], prev * 1000 + i * 10 + 2); EQ(mat[i][1], rank * 1000 + i * 10 + 1); }
            break;
        }
        OK(MPI_Type_free(&column));
        TRUE(column == MPI_DATATYPE_NULL);
    }

    /* Structs with padding, and partial receives: Get_count / Get_elements. */
    {
        struct particle out[3], in[3];
        for (int i = 0; i < 3; i++) { out[i].x = rank + i * 0.25; out[i].id = rank * 10 + i; out[i].tag = 'a' + i; }
        memset(in, 0, sizeof in);
        OK(MPI_Sendrecv(out, 2, strct, next, 6, in, 3, strct, prev, 6, MPI_COMM_WORLD, &st));
        OK(MPI_Get_count(&st, strct, &count)); EQ(count, 2);
        OK(MPI_Get_elements(&st, strct, &count)); EQ(count, 6);
        TRUE(in[1].x == prev + 0.25); EQ(in[1].id, prev * 10 + 1); EQ(in[1].tag, 'b'); EQ(in[2].id, 0);
        /* One double's 8 bytes as particles: not a whole one, one element. */
        double d[2] = {1.0, 2.0};
        OK(MPI_Sendrecv(d, 1, MPI_DOUBLE, next, 7, in, 3, strct, prev, 7, MPI_COMM_WORLD, &st));
        OK(MPI_Get_count(&st, strct, &count)); EQ(count, MPI_UNDEFINED);
        OK(MPI_Get_elements(&st, strct, &count)); EQ(count, 1);
        MPI_Count ex = 0;
        OK(MPI_Get_elements_x(&st, strct, &ex)); EQ(ex, 1);
        /* Truncation into a derived type: the prefix arrives. */
        MPI_Request sr;
        memset(in, 0, sizeof in);
        OK(MPI_Isend(out, 3, strct, next, 8, MPI_COMM_WORLD, &sr));
        st.MPI_ERROR = -1;
        ERR(MPI_ERR_TRUNCATE, MPI_Recv(in, 2, strct, prev, 8, MPI_COMM_WORLD, &st));
        EQ(st.MPI_ERROR, -1); /* single completion: MPI_ERROR untouched */
        EQ(in[1].id, prev * 10 + 1); EQ(in[1].tag, 'b');
        OK(MPI_Wait(&sr, MPI_STATUS_IGNORE));
    }

    /* MPI_BOTTOM with absolute addresses. */
    {
        int a = rank * 3, b = 0;
        double c = rank * 0.5, dd = 0;
        MPI_Aint addr[2];
        OK(MPI_Get_address(&a, &addr[0]));
        OK(MPI_Get_address(&c, &addr[1]));
        TRUE(MPI_Aint_diff(addr[1], addr[0]) == (char *)&c - (char *)&a);
        TRUE(MPI_Aint_add(addr[0], 4) == addr[0] + 4);
        int bl[2] = {1, 1};
        MPI_Datatype ty[2] = {MPI_INT, MPI_DOUBLE}, abs_out, abs_in;
        OK(MPI_Type_create_struct(2, bl, addr, ty, &abs_out));
        OK(MPI_Get_address(&b, &addr[0]));
        OK(MPI_Get_address(&dd, &addr[1]));
        OK(MPI_Type_create_struct(2, bl, addr, ty, &abs_in));
        OK(MPI_Type_commit(&abs_out)); OK(MPI_Type_commit(&abs_in));
        OK(MPI_Sendrecv(MPI_BOTTOM, 1, abs_out, next, 9, MPI_BOTTOM, 1, abs_in, prev, 9, MPI_COMM_WORLD, &st));
        EQ(b, prev * 3); TRUE(dd == prev * 0.5);
        OK(MPI_Type_free(&abs_out)); OK(MPI_Type_free(&abs_in));
    }

    /* A freed receive of a non-contiguous type still lands: a later MPI call
     * (here the Sendrecv whose message follows it) finishes it. */
    {
        int mat[N][4], v[N], tok = rank, got = -1;
        memset(mat, 0, sizeof mat);
        MPI_Datatype column;
        MPI_Request r;
        OK(MPI_Type_vector(N, 1, 4, MPI_INT, &column)); OK(MPI_Type_commit(&column));
        OK(MPI_Irecv(&mat[0][2], 1, column, prev, 30, MPI_COMM_WORLD, &r));
        OK(MPI_Type_free(&column)); /* the pending receive keeps its layout */
        OK(MPI_Request_free(&r)); TRUE(r == MPI_REQUEST_NULL);
        for (int i = 0; i < N; i++) v[i] = rank * 100 + i;
        OK(MPI_Send(v, N, MPI_INT, next, 30, MPI_COMM_WORLD));
        OK(MPI_Sendrecv(&tok, 1, MPI_INT, next, 31, &got, 1, MPI_INT, prev, 31, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        EQ(got, prev);
        for (int i = 0; i < N; i++) { EQ(mat[i][2], prev * 100 + i); EQ(mat[i][1], 0); }
    }

    for (int i = 0; i < 10; i++) OK(MPI_Type_free(&all[i]));
    ERR(MPI_ERR_TYPE, MPI_Type_free(&all[0])); /* MPI_DATATYPE_NULL now */
    /* Pack_external: external32 is big-endian at the standard's sizes
     * (MPI_LONG is 4 bytes there), and unpacks back. */
    {
        int iv[3] = {1, -2, 0x01020304};
        double dv[2] = {1.5, -0.25};
        long lv[2] = {-7, 123456};
        unsigned char out[64];
        MPI_Aint pos = 0, sz = -1;
        OK(MPI_Pack_external_size("external32", 3, MPI_INT, &sz)); EQ(sz, 12);
        OK(MPI_Pack_external_size("external32", 2, MPI_LONG, &sz)); EQ(sz, 8);
        OK(MPI_Pack_external("external32", iv, 3, MPI_INT, out, sizeof out, &pos)); EQ(pos, 12);
        TRUE(out[8] == 1 && out[9] == 2 && out[10] == 3 && out[11] == 4);
        TRUE(out[4] == 0xff && out[7] == 0xfe);
        OK(MPI_Pack_external("external32", lv, 2, MPI_LONG, out, sizeof out, &pos)); EQ(pos, 20);
        TRUE(out[12] == 0xff && out[15] == 0xf9);
        OK(MPI_Pack_external("external32", dv, 2, MPI_DOUBLE, out, sizeof out, &pos)); EQ(pos, 36);
        TRUE(out[20] == 0x3f && out[21] == 0xf8); /* 1.5 = 0x3ff8000000000000 */
        /* A vector of every other int: only its data, converted. */
        MPI_Datatype every2;
        OK(MPI_Type_vector(2, 1, 2, MPI_INT, &every2)); OK(MPI_Type_commit(&every2));
        int src4[4] = {10, 11, 12, 13}, got4[4] = {0, -1, 0, -1};
        MPI_Aint vpos = 0;
        unsigned char vout[8];
        OK(MPI_Pack_external("external32", src4, 1, every2, vout, sizeof vout, &vpos)); EQ(vpos, 8);
        TRUE(vout[3] == 10 && vout[7] == 12);
        vpos = 0;
        OK(MPI_Unpack_external("external32", vout, sizeof vout, &vpos, got4, 1, every2)); EQ(vpos, 8);
        EQ(got4[0], 10); EQ(got4[1], -1); EQ(got4[2], 12); EQ(got4[3], -1);
        OK(MPI_Type_free(&every2));
        /* Back again, in order. */
        int ib[3]; long lb2[2]; double db[2];
        pos = 0;
        OK(MPI_Unpack_external("external32", out, 36, &pos, ib, 3, MPI_INT));
        OK(MPI_Unpack_external("external32", out, 36, &pos, lb2, 2, MPI_LONG));
        OK(MPI_Unpack_external("external32", out, 36, &pos, db, 2, MPI_DOUBLE)); EQ(pos, 36);
        EQ(ib[0], 1); EQ(ib[1], -2); EQ(ib[2], 0x01020304);
        EQ(lb2[0], -7); EQ(lb2[1], 123456);
        TRUE(db[0] == 1.5 && db[1] == -0.25);
        /* Errors: no room, an unknown representation, a long too wide. */
        pos = 30;
        ERR(MPI_ERR_TRUNCATE, MPI_Pack_external("external32", iv, 3, MPI_INT, out, 36, &pos));
        pos = 0;
        ERR(MPI_ERR_UNSUPPORTED_DATAREP, MPI_Pack_external("native", iv, 1, MPI_INT, out, 36, &pos));
        long wide = 1L << 40;
        ERR(MPI_ERR_CONVERSION, MPI_Pack_external("external32", &wide, 1, MPI_LONG, out, 36, &pos));
    }

    check_done("dtypes");
    return 0;
}
