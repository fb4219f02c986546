/* Datatype decoding: MPI_Type_get_envelope and MPI_Type_get_contents on
 * predefined types (MPI_COMBINER_NAMED, no contents) and on every
 * constructor, with the arguments as given; returned derived types are new
 * handles (freed here, still usable after the original is freed),
 * predefined ones are themselves. MPI_Type_get_value_index. */
#include "check.h"
#include <string.h>

#define MAXA 16

struct contents {
    int ni, na, nd, combiner;
    int ints[MAXA];
    MPI_Aint aints[MAXA];
    MPI_Datatype types[MAXA];
};

static struct contents decode(MPI_Datatype t, int combiner) {
    struct contents c;
    memset(&c, 0, sizeof c);
    OK(MPI_Type_get_envelope(t, &c.ni, &c.na, &c.nd, &c.combiner));
    EQ(c.combiner, combiner);
    TRUE(c.ni <= MAXA && c.na <= MAXA && c.nd <= MAXA);
    OK(MPI_Type_get_contents(t, MAXA, MAXA, MAXA, c.ints, c.aints, c.types));
    return c;
}

/* Frees the derived types get_contents returned. */
static void release(struct contents *c) {
    for (int i = 0; i < c->nd; i++) {
        int ni, na, nd, comb;
        OK(MPI_Type_get_envelope(c->types[i], &ni, &na, &nd, &comb));
        if (comb != MPI_COMBINER_NAMED) OK(MPI_Type_free(&c->types[i]));
    }
}

static void same_extent(MPI_Datatype a, MPI_Datatype b) {
    MPI_Aint la, ea, lb, eb;
    int sa, sb;
    OK(MPI_Type_get_extent(a, &la, &ea));
    OK(MPI_Type_get_extent(b, &lb, &eb));
    EQ(la, lb); EQ(ea, eb);
    OK(MPI_Type_size(a, &sa)); OK(MPI_Type_size(b, &sb)); EQ(sa, sb);
}

int main(int argc, char **argv) {
    check_init(&argc, &argv);
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int ints[4];
    MPI_Aint aints[4];
    MPI_Datatype types[4];

    /* Predefined: NAMED, nothing to get. */
    MPI_Datatype named[] = {MPI_INT, MPI_DOUBLE, MPI_CHAR, MPI_DOUBLE_INT, MPI_2INT, MPI_PACKED, MPI_BYTE};
    for (unsigned i = 0; i < sizeof named / sizeof named[0]; i++) {
        int ni = -1, na = -1, nd = -1, comb = -1;
        OK(MPI_Type_get_envelope(named[i], &ni, &na, &nd, &comb));
        EQ(comb, MPI_COMBINER_NAMED); EQ(ni, 0); EQ(na, 0); EQ(nd, 0);
        ERR(MPI_ERR_TYPE, MPI_Type_get_contents(named[i], 4, 4, 4, ints, aints, types));
    }
    int x1, x2, x3, x4;
    ERR(MPI_ERR_TYPE, MPI_Type_get_envelope(MPI_DATATYPE_NULL, &x1, &x2, &x3, &x4));

    /* Contiguous of a predefined type: the type comes back as itself. */
    MPI_Datatype contig;
    OK(MPI_Type_contiguous(5, MPI_INT, &contig));
    struct contents c = decode(contig, MPI_COMBINER_CONTIGUOUS);
    EQ(c.ni, 1); EQ(c.na, 0); EQ(c.nd, 1);
    EQ(c.ints[0], 5); TRUE(c.types[0] == MPI_INT);
    release(&c);
    /* Too small arrays. */
    ERR(MPI_ERR_ARG, MPI_Type_get_contents(contig, 0, 0, 1, ints, aints, types));
    ERR(MPI_ERR_ARG, MPI_Type_get_contents(contig, 1, 0, 0, ints, aints, types));

    /* Vector and hvector. */
    MPI_Datatype vec, hvec;
    OK(MPI_Type_vector(3, 2, -4, MPI_DOUBLE, &vec));
    c = decode(vec, MPI_COMBINER_VECTOR);
    EQ(c.ni, 3); EQ(c.na, 0); EQ(c.nd, 1);
    EQ(c.ints[0], 3); EQ(c.ints[1], 2); EQ(c.ints[2], -4); TRUE(c.types[0] == MPI_DOUBLE);
    OK(MPI_Type_create_hvector(2, 1, 100, contig, &hvec));
    c = decode(hvec, MPI_COMBINER_HVECTOR);
    EQ(c.ni, 2); EQ(c.na, 1); EQ(c.nd, 1);
    EQ(c.ints[0], 2); EQ(c.ints[1], 1); EQ(c.aints[0], 100);
    /* A derived argument is a new handle: decode it, then free it. */
    TRUE(c.types[0] != contig);
    struct contents inner = decode(c.types[0], MPI_COMBINER_CONTIGUOUS);
    EQ(inner.ints[0], 5); TRUE(inner.types[0] == MPI_INT);
    same_extent(c.types[0], contig);
    release(&inner);
    release(&c);

    /* Indexed, hindexed, indexed_block, hindexed_block. */
    int lens[3] = {1, 2, 3}, disps[3] = {10, 0, 20};
    MPI_Aint hdisps[3] = {-8, 64, 128};
    MPI_Datatype idx, hidx, blk, hblk;
    OK(MPI_Type_indexed(3, lens, disps, MPI_SHORT, &idx));
    c = decode(idx, MPI_COMBINER_INDEXED);
    EQ(c.ni, 7); EQ(c.na, 0); EQ(c.nd, 1);
    EQ(c.ints[0], 3);
    for (int i = 0; i < 3; i++) { EQ(c.ints[1 + i], lens[i]); EQ(c.ints[4 + i], disps[i]); }
    TRUE(c.types[0] == MPI_SHORT);
    OK(MPI_Type_create_hindexed(3, lens, hdisps, vec, &hidx));
    c = decode(hidx, MPI_COMBINER_HINDEXED);
    EQ(c.ni, 4); EQ(c.na, 3); EQ(c.nd, 1);
    for (int i = 0; i < 3; i++) { EQ(c.ints[1 + i], lens[i]); EQ(c.aints[i], hdisps[i]); }
    inner = decode(c.types[0], MPI_COMBINER_VECTOR);
    EQ(inner.ints[2], -4);
    release(&inner);
    release(&c);
    OK(MPI_Type_create_indexed_block(3, 4, disps, MPI_FLOAT, &blk));
    c = decode(blk, MPI_COMBINER_INDEXED_BLOCK);
    EQ(c.ni, 5); EQ(c.na, 0); EQ(c.nd, 1);
    EQ(c.ints[0], 3); EQ(c.ints[1], 4);
    for (int i = 0; i < 3; i++) EQ(c.ints[2 + i], disps[i]);
    OK(MPI_Type_create_hindexed_block(3, 2, hdisps, MPI_CHAR, &hblk));
    c = decode(hblk, MPI_COMBINER_HINDEXED_BLOCK);
    EQ(c.ni, 2); EQ(c.na, 3); EQ(c.nd, 1);
    EQ(c.ints[0], 3); EQ(c.ints[1], 2);
    for (int i = 0; i < 3; i++) EQ(c.aints[i], hdisps[i]);
    TRUE(c.types[0] == MPI_CHAR);

    /* Struct of a predefined and two derived types. */
    int slens[3] = {2, 1, 3};
    MPI_Aint sdisps[3] = {0, 16, 200};
    MPI_Datatype stypes[3] = {MPI_INT, hvec, vec};
    MPI_Datatype strct;
    OK(MPI_Type_create_struct(3, slens, sdisps, stypes, &strct));
    c = decode(strct, MPI_COMBINER_STRUCT);
    EQ(c.ni, 4); EQ(c.na, 3); EQ(c.nd, 3);
    EQ(c.ints[0], 3);
    for (int i = 0; i < 3; i++) { EQ(c.ints[1 + i], slens[i]); EQ(c.aints[i], sdisps[i]); }
    TRUE(c.types[0] == MPI_INT);
    TRUE(c.types[1] != hvec && c.types[2] != vec);
    same_extent(c.types[1], hvec);
    same_extent(c.types[2], vec);
    inner = decode(c.types[1], MPI_COMBINER_HVECTOR);
    EQ(inner.aints[0], 100);
    release(&inner);
    release(&c);

    /* Resized and dup (of a predefined type, and of a derived one). */
    MPI_Datatype rsz, dup1, dup2;
    OK(MPI_Type_create_resized(MPI_INT, -4, 16, &rsz));
    c = decode(rsz, MPI_COMBINER_RESIZED);
    EQ(c.ni, 0); EQ(c.na, 2); EQ(c.nd, 1);
    EQ(c.aints[0], -4); EQ(c.aints[1], 16); TRUE(c.types[0] == MPI_INT);
    OK(MPI_Type_dup(MPI_DOUBLE, &dup1));
    c = decode(dup1, MPI_COMBINER_DUP);
    EQ(c.ni, 0); EQ(c.na, 0); EQ(c.nd, 1); TRUE(c.types[0] == MPI_DOUBLE);
    OK(MPI_Type_dup(rsz, &dup2));
    c = decode(dup2, MPI_COMBINER_DUP);
    inner = decode(c.types[0], MPI_COMBINER_RESIZED);
    EQ(inner.aints[0], -4);
    release(&inner);
    release(&c);

    /* The recipe outlives the arguments' handles: free hvec and vec, then
     * decode strct again and send with a returned type. */
    OK(MPI_Type_free(&hvec));
    OK(MPI_Type_free(&vec));
    c = decode(strct, MPI_COMBINER_STRUCT);
    inner = decode(c.types[2], MPI_COMBINER_VECTOR);
    EQ(inner.ints[0], 3); EQ(inner.ints[1], 2);
    release(&inner);
    OK(MPI_Type_commit(&c.types[2]));
    double src[16], dst[16];
    for (int i = 0; i < 16; i++) { src[i] = i; dst[i] = -1; }
    /* The vector (3 blocks of 2 doubles, stride -4) starts at element 8. */
    OK(MPI_Sendrecv(src + 8, 1, c.types[2], 0, 5, dst + 8, 1, c.types[2], 0, 5, MPI_COMM_SELF, MPI_STATUS_IGNORE));
    for (int i = 0; i < 16; i++) {
        int in = (i == 8 || i == 9 || i == 4 || i == 5 || i == 0 || i == 1);
        if (in) EQ(dst[i], src[i]); else EQ(dst[i], -1);
    }
    release(&c);

    /* Type_get_value_index: the predefined pair types, or null. */
    MPI_Datatype pair;
    OK(MPI_Type_get_value_index(MPI_DOUBLE, MPI_INT, &pair)); TRUE(pair == MPI_DOUBLE_INT);
    OK(MPI_Type_get_value_index(MPI_INT, MPI_INT, &pair)); TRUE(pair == MPI_2INT);
    OK(MPI_Type_get_value_index(MPI_SHORT, MPI_INT, &pair)); TRUE(pair == MPI_SHORT_INT);
    OK(MPI_Type_get_value_index(MPI_REAL, MPI_INTEGER, &pair)); TRUE(pair == MPI_2REAL);
    OK(MPI_Type_get_value_index(MPI_FLOAT, MPI_FLOAT, &pair)); TRUE(pair == MPI_DATATYPE_NULL);
    OK(MPI_Type_get_value_index(MPI_CHAR, MPI_INT, &pair)); TRUE(pair == MPI_DATATYPE_NULL);
    ERR(MPI_ERR_TYPE, MPI_Type_get_value_index(MPI_DATATYPE_NULL, MPI_INT, &pair));

    MPI_Datatype all[] = {contig, idx, hidx, blk, hblk, strct, rsz, dup1, dup2};
    for (unsigned i = 0; i < sizeof all / sizeof all[0]; i++) OK(MPI_Type_free(&all[i]));
    check_done("typedecode");
    return 0;
}
