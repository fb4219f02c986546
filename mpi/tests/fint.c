/* fint.c: handles as integers (MPI 5.0: MPI_X_toint / MPI_X_fromint,
 * which MPI_X_c2f / MPI_X_f2c name, MPI_Fint being int), as a Fortran
 * binding or a profiling tool uses them: predefined handles convert to
 * their own values, every kind of user handle converts and back while its
 * object lives (communicators, datatypes, groups, ops, infos, error
 * handlers, messages, requests on MPI_COMM_WORLD and on a duplicate),
 * statuses convert field by field (C, Fortran 77 arrays, Fortran 2008's
 * MPI_F08_status, every way; an ignored status refused), and a freed object's integer no
 * longer names a live one. The ABI's Fortran queries: what a binding sets
 * once (its info, its LOGICAL values) reads back, a second set is
 * MPI_ERR_ABI; MPI_Type_match_size and MPI_Type_create_f90_*. */
#include "check.h"

static void noop(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)in; (void)inout; (void)len; (void)dt;
}

static void eh(MPI_Comm *c, int *code, ...) { (void)c; (void)code; }

int main(int argc, char **argv) {
    check_init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Predefined handles are their own integers. */
    TRUE(MPI_Comm_f2c(MPI_Comm_c2f(MPI_COMM_WORLD)) == MPI_COMM_WORLD);
    TRUE(MPI_Type_f2c(MPI_Type_c2f(MPI_INT)) == MPI_INT);
    TRUE(MPI_Op_f2c(MPI_Op_c2f(MPI_SUM)) == MPI_SUM);
    TRUE(MPI_Request_f2c(MPI_Request_c2f(MPI_REQUEST_NULL)) == MPI_REQUEST_NULL);
    TRUE(MPI_Win_f2c(MPI_Win_c2f(MPI_WIN_NULL)) == MPI_WIN_NULL);
    TRUE(MPI_Group_f2c(MPI_Group_c2f(MPI_GROUP_EMPTY)) == MPI_GROUP_EMPTY);
    EQ(MPI_Comm_c2f(MPI_COMM_WORLD), (MPI_Fint)(size_t)MPI_COMM_WORLD);

    /* User handles of every kind, and back. */
    MPI_Comm dup;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_Fint fdup = MPI_Comm_c2f(dup);
    TRUE(MPI_Comm_f2c(fdup) == dup);
    int dsize = 0;
    OK(MPI_Comm_size(MPI_Comm_f2c(fdup), &dsize)); EQ(dsize, size);
    MPI_Datatype pair;
    OK(MPI_Type_contiguous(2, MPI_INT, &pair)); OK(MPI_Type_commit(&pair));
    TRUE(PMPI_Type_f2c(PMPI_Type_c2f(pair)) == pair);
    MPI_Group g;
    OK(MPI_Comm_group(dup, &g));
    TRUE(MPI_Group_f2c(MPI_Group_c2f(g)) == g);
    MPI_Op op;
    OK(MPI_Op_create(noop, 1, &op));
    TRUE(MPI_Op_f2c(MPI_Op_c2f(op)) == op);
    MPI_Info info;
    OK(MPI_Info_create(&info));
    TRUE(MPI_Info_f2c(MPI_Info_c2f(info)) == info);
    MPI_Errhandler e;
    OK(MPI_Comm_create_errhandler(eh, &e));
    TRUE(MPI_Errhandler_f2c(MPI_Errhandler_c2f(e)) == e);

    /* Requests: on the world (a direct handle below MPI_THREAD_MULTIPLE)
     * and on the duplicate (a table entry), completed through the
     * converted handle. */
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Comm comms[2] = {MPI_COMM_WORLD, dup};
    for (int k = 0; k < 2; k++) {
        int out = rank * 10 + k, in = -1;
        MPI_Request r[2];
        OK(MPI_Irecv(&in, 1, MPI_INT, prev, 40 + k, comms[k], &r[0]));
        OK(MPI_Isend(&out, 1, MPI_INT, next, 40 + k, comms[k], &r[1]));
        for (int j = 0; j < 2; j++) {
            MPI_Fint f = MPI_Request_c2f(r[j]);
            r[j] = MPI_Request_f2c(f);
        }
        OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
        EQ(in, prev * 10 + k);
    }

    /* A matched message and a status, through their Fortran forms. */
    int v = rank, got = -1;
    MPI_Request sr;
    OK(MPI_Isend(&v, 1, MPI_INT, next, 50, dup, &sr));
    MPI_Message m;
    MPI_Status st, st2;
    OK(MPI_Mprobe(prev, 50, dup, &m, &st));
    MPI_Message m2 = MPI_Message_f2c(MPI_Message_c2f(m));
    TRUE(m2 == m);
    OK(MPI_Mrecv(&got, 1, MPI_INT, &m2, &st));
    EQ(got, prev);
    OK(MPI_Wait(&sr, MPI_STATUS_IGNORE));
    MPI_Fint fst[MPI_F_STATUS_SIZE];
    OK(MPI_Status_c2f(&st, fst));
    EQ(fst[MPI_F_SOURCE], prev); EQ(fst[MPI_F_TAG], 50);
    OK(MPI_Status_f2c(fst, &st2));
    int count = 0;
    OK(MPI_Get_count(&st2, MPI_INT, &count)); EQ(count, 1);
    EQ(st2.MPI_SOURCE, prev);
    /* Fortran 2008's status: each way, and back; ignored statuses refused. */
    MPI_F08_status f08, f08b;
    MPI_Status st3;
    OK(MPI_Status_c2f08(&st, &f08));
    EQ(f08.MPI_SOURCE, prev); EQ(f08.MPI_TAG, 50);
    MPI_Fint fst2[MPI_F_STATUS_SIZE];
    OK(MPI_Status_f082f(&f08, fst2));
    OK(MPI_Status_f2f08(fst2, &f08b));
    OK(MPI_Status_f082c(&f08b, &st3));
    EQ(st3.MPI_SOURCE, prev); EQ(st3.MPI_TAG, 50);
    count = 0;
    OK(MPI_Get_count(&st3, MPI_INT, &count)); EQ(count, 1);
    ERR(MPI_ERR_ARG, MPI_Status_c2f08(MPI_STATUS_IGNORE, &f08));
    ERR(MPI_ERR_ARG, MPI_Status_f082c(MPI_F08_STATUS_IGNORE, &st3));
    ERR(MPI_ERR_ARG, MPI_Status_f2c(MPI_F_STATUS_IGNORE, &st3));
    ERR(MPI_ERR_ARG, PMPI_Status_c2f(&st, MPI_F_STATUSES_IGNORE));
    TRUE(sizeof(MPI_F08_status) == sizeof(MPI_Status));

    /* A freed object's integer names no live object. */
    OK(MPI_Info_free(&info));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    OK(MPI_Comm_free(&dup));
    int sz;
    ERR(MPI_ERR_COMM, MPI_Comm_size(MPI_Comm_f2c(fdup), &sz));

    OK(MPI_Errhandler_free(&e));
    OK(MPI_Op_free(&op));
    OK(MPI_Group_free(&g));
    OK(MPI_Type_free(&pair));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    /* The Fortran ABI queries: nothing set yet, then a binding's facts. */
    MPI_Info fi;
    int nkeys = -1, is_set = -1, t4 = 0, f4 = 0;
    OK(MPI_Abi_get_fortran_info(&fi));
    TRUE(fi == MPI_INFO_NULL);
    (void)nkeys;
    OK(MPI_Abi_get_fortran_booleans(4, &t4, &f4, &is_set)); EQ(is_set, 0);
    MPI_Info mine;
    OK(MPI_Info_create(&mine));
    OK(MPI_Info_set(mine, "mpi_integer_size", "4"));
    OK(MPI_Abi_set_fortran_info(mine));
    ERR(MPI_ERR_ABI, MPI_Abi_set_fortran_info(mine));
    OK(MPI_Info_free(&mine));
    OK(MPI_Abi_get_fortran_info(&fi));
    char iv[8];
    int vlen = sizeof iv, found = 0;
    OK(MPI_Info_get_string(fi, "mpi_integer_size", &vlen, iv, &found));
    EQ(found, 1); EQ(atoi(iv), 4);
    OK(MPI_Info_free(&fi));
    int yes = -1, no = 0;
    ERR(MPI_ERR_ARG, MPI_Abi_set_fortran_booleans(3, &yes, &no));
    OK(MPI_Abi_set_fortran_booleans(4, &yes, &no));
    ERR(MPI_ERR_ABI, MPI_Abi_set_fortran_booleans(4, &yes, &no));
    OK(MPI_Abi_get_fortran_booleans(4, &t4, &f4, &is_set));
    EQ(is_set, 1); EQ(t4, -1); EQ(f4, 0);
    long long t8 = 5;
    OK(MPI_Abi_get_fortran_booleans(8, &t8, &t8, &is_set)); EQ(is_set, 0); EQ(t8, 5);

    /* Fortran sized types by class and size. */
    MPI_Datatype mt;
    OK(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &mt)); TRUE(mt == MPI_REAL8);
    OK(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 4, &mt)); TRUE(mt == MPI_INTEGER4);
    OK(MPI_Type_match_size(MPI_TYPECLASS_COMPLEX, 16, &mt)); TRUE(mt == MPI_COMPLEX16);
    int msz;
    OK(MPI_Type_size(mt, &msz)); EQ(msz, 16);
    ERR(MPI_ERR_ARG, MPI_Type_match_size(MPI_TYPECLASS_REAL, 3, &mt));
    ERR(MPI_ERR_ARG, MPI_Type_match_size(7, 4, &mt));
    /* f90 types: the sized type's layout, decoded as F90 with their
     * arguments, one handle per argument set, not to be freed. */
    int ni, na, nd, comb, fsz, fints[2];
    MPI_Datatype again;
    OK(MPI_Type_create_f90_integer(9, &mt));
    OK(MPI_Type_size(mt, &fsz)); EQ(fsz, 4);
    OK(MPI_Type_get_envelope(mt, &ni, &na, &nd, &comb));
    EQ(comb, MPI_COMBINER_F90_INTEGER); EQ(ni, 1); EQ(na, 0); EQ(nd, 0);
    OK(MPI_Type_get_contents(mt, 1, 0, 0, fints, NULL, NULL)); EQ(fints[0], 9);
    OK(MPI_Type_create_f90_integer(9, &again)); TRUE(again == mt);
    ERR(MPI_ERR_TYPE, MPI_Type_free(&again));
    OK(MPI_Type_create_f90_integer(10, &mt)); OK(MPI_Type_size(mt, &fsz)); EQ(fsz, 8);
    OK(MPI_Type_create_f90_real(10, MPI_UNDEFINED, &mt)); OK(MPI_Type_size(mt, &fsz)); EQ(fsz, 8);
    OK(MPI_Type_get_envelope(mt, &ni, &na, &nd, &comb));
    EQ(comb, MPI_COMBINER_F90_REAL); EQ(ni, 2);
    OK(MPI_Type_get_contents(mt, 2, 0, 0, fints, NULL, NULL)); EQ(fints[0], 10); EQ(fints[1], MPI_UNDEFINED);
    OK(MPI_Type_create_f90_real(MPI_UNDEFINED, 30, &mt)); OK(MPI_Type_size(mt, &fsz)); EQ(fsz, 4);
    OK(MPI_Type_create_f90_complex(15, 300, &mt)); OK(MPI_Type_size(mt, &fsz)); EQ(fsz, 16);
    ERR(MPI_ERR_ARG, MPI_Type_create_f90_real(40, MPI_UNDEFINED, &mt));

    check_done("fint");
}
