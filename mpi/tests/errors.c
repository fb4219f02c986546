/* Error handling: MPI_ERRORS_RETURN with bad ranks, tags, communicators,
 * datatypes, counts, requests, roots and ops; truncation; error strings;
 * user error handlers; the program's own error classes, codes and strings.
 * (fatal.c checks MPI_ERRORS_ARE_FATAL.) */
#include "check.h"
#include <string.h>

static int called = 0, called_code = -1;
static MPI_Comm called_comm = MPI_COMM_NULL;

static void handler(MPI_Comm *comm, int *code, ...) {
    called++;
    called_code = *code;
    called_comm = *comm;
}

int main(int argc, char **argv) {
    check_init(&argc, &argv);
    int size, x = 1, cls = -1, len = 0;
    char s[MPI_MAX_ERROR_STRING];
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* The default handler is MPI_ERRORS_ARE_FATAL. */
    MPI_Errhandler eh;
    OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
    TRUE(eh == MPI_ERRORS_ARE_FATAL);
    OK(MPI_Errhandler_free(&eh)); TRUE(eh == MPI_ERRHANDLER_NULL);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
    TRUE(eh == MPI_ERRORS_RETURN);

    ERR(MPI_ERR_RANK, MPI_Send(&x, 1, MPI_INT, size, 0, MPI_COMM_WORLD));
    ERR(MPI_ERR_RANK, MPI_Send(&x, 1, MPI_INT, -7, 0, MPI_COMM_WORLD));
    ERR(MPI_ERR_TAG, MPI_Send(&x, 1, MPI_INT, 0, -5, MPI_COMM_WORLD));
    ERR(MPI_ERR_TAG, MPI_Send(&x, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD));
    ERR(MPI_ERR_TYPE, MPI_Send(&x, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD));
    ERR(MPI_ERR_TYPE, MPI_Send(&x, 1, (MPI_Datatype)0x1234567, 0, 0, MPI_COMM_WORLD));
    ERR(MPI_ERR_COUNT, MPI_Send(&x, -1, MPI_INT, 0, 0, MPI_COMM_WORLD));
    ERR(MPI_ERR_COMM, MPI_Send(&x, 1, MPI_INT, 0, 0, MPI_COMM_NULL));
    ERR(MPI_ERR_COMM, MPI_Send(&x, 1, MPI_INT, 0, 0, (MPI_Comm)0x777));
    ERR(MPI_ERR_BUFFER, MPI_Send(NULL, 4, MPI_INT, 0, 0, MPI_COMM_WORLD));
    MPI_Comm dup;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_Comm stale = dup;
    OK(MPI_Comm_free(&dup)); TRUE(dup == MPI_COMM_NULL);
    ERR(MPI_ERR_COMM, MPI_Send(&x, 1, MPI_INT, 0, 0, stale));
    ERR(MPI_ERR_COMM, MPI_Comm_free(&stale));
    MPI_Comm w = MPI_COMM_WORLD;
    ERR(MPI_ERR_COMM, MPI_Comm_free(&w));

    /* Requests: a stale handle, a handle of another kind. */
    MPI_Request r;
    OK(MPI_Irecv(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r));
    MPI_Request kept = r;
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE)); TRUE(r == MPI_REQUEST_NULL);
    ERR(MPI_ERR_REQUEST, MPI_Wait(&kept, MPI_STATUS_IGNORE));
    MPI_Request wrong = (MPI_Request)MPI_COMM_WORLD;
    ERR(MPI_ERR_REQUEST, MPI_Wait(&wrong, MPI_STATUS_IGNORE));
    MPI_Request null = MPI_REQUEST_NULL;
    ERR(MPI_ERR_REQUEST, MPI_Request_free(&null));

    /* Collectives: a bad root, a bad op, an op undefined on the type. */
    double d = 1.0, out = 0;
    ERR(MPI_ERR_ROOT, MPI_Bcast(&x, 1, MPI_INT, size, MPI_COMM_WORLD));
    ERR(MPI_ERR_ROOT, MPI_Reduce(&d, &out, 1, MPI_DOUBLE, MPI_SUM, -1, MPI_COMM_WORLD));
    ERR(MPI_ERR_OP, MPI_Allreduce(&d, &out, 1, MPI_DOUBLE, MPI_OP_NULL, MPI_COMM_WORLD));
    ERR(MPI_ERR_OP, MPI_Allreduce(&d, &out, 1, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD));
    ERR(MPI_ERR_OP, MPI_Allreduce(&d, &out, 1, MPI_DOUBLE, MPI_REPLACE, MPI_COMM_WORLD));
    unsigned char quad[16] = {0}, quads[16];
    ERR(MPI_ERR_UNSUPPORTED_OPERATION, MPI_Allreduce(quad, quads, 1, MPI_REAL16, MPI_SUM, MPI_COMM_WORLD));

    /* Truncation: a message longer than the receive buffer. */
    int big[4] = {1, 2, 3, 4}, small[2] = {0, 0};
    MPI_Status st;
    OK(MPI_Isend(big, 4, MPI_INT, 0, 9, MPI_COMM_SELF, &r));
    st.MPI_ERROR = -1;
    ERR(MPI_ERR_TRUNCATE, MPI_Recv(small, 2, MPI_INT, 0, 9, MPI_COMM_SELF, &st));
    /* A single completion leaves MPI_ERROR as it was (MPI 4.1 3.2.5). */
    EQ(st.MPI_ERROR, -1);
    EQ(small[0], 1); EQ(small[1], 2);
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));

    /* Error classes and strings. */
    for (int c = 0; c <= MPI_ERR_ERRHANDLER; c++) {
        OK(MPI_Error_class(c, &cls)); EQ(cls, c);
        OK(MPI_Error_string(c, s, &len));
        TRUE(len > 0 && len == (int)strlen(s));
    }
    OK(MPI_Error_string(MPI_ERR_TRUNCATE, s, &len));
    TRUE(strstr(s, "MPI_ERR_TRUNCATE") != NULL);
    ERR(MPI_ERR_ARG, MPI_Error_class(100000, &cls));

    /* A user handler: called with the code, then the call returns it. */
    MPI_Errhandler mine;
    OK(MPI_Comm_create_errhandler(handler, &mine));
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    OK(MPI_Comm_set_errhandler(dup, mine));
    OK(MPI_Errhandler_free(&mine));   /* the communicator keeps it */
    int rc = MPI_Send(&x, 1, MPI_INT, size + 3, 0, dup);
    MPI_Error_class(rc, &cls); EQ(cls, MPI_ERR_RANK);
    EQ(called, 1); EQ(called_code, rc); TRUE(called_comm == dup);
    /* Errors found while checking arguments are raised on the
     * communicator too (not on MPI_COMM_SELF). */
    MPI_Request rq;
    int y = 0;
    rc = MPI_Irecv(&x, 1, MPI_DATATYPE_NULL, 0, 0, dup, &rq);
    MPI_Error_class(rc, &cls); EQ(cls, MPI_ERR_TYPE); EQ(called, 2); TRUE(called_comm == dup);
    rc = MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_OP_NULL, dup);
    MPI_Error_class(rc, &cls); EQ(cls, MPI_ERR_OP); EQ(called, 3);
    rc = MPI_Ibcast(&x, 1, MPI_INT, size, dup, &rq);
    MPI_Error_class(rc, &cls); EQ(cls, MPI_ERR_ROOT); EQ(called, 4);
    called = 1;
    OK(MPI_Comm_call_errhandler(dup, MPI_ERR_OTHER));
    EQ(called, 2); EQ(called_code, MPI_ERR_OTHER);
    MPI_Errhandler got;
    OK(MPI_Comm_get_errhandler(dup, &got));
    TRUE(got != MPI_ERRORS_RETURN && got != MPI_ERRORS_ARE_FATAL);
    /* A communicator split from it inherits the handler. */
    MPI_Comm part;
    OK(MPI_Comm_split(dup, 0, 0, &part));
    rc = MPI_Send(&x, 1, MPI_INT, 0, -9, part);
    MPI_Error_class(rc, &cls); EQ(cls, MPI_ERR_TAG); EQ(called, 3);
    OK(MPI_Comm_free(&part));
    OK(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
    OK(MPI_Errhandler_free(&got));
    ERR(MPI_ERR_ARG, MPI_Comm_set_errhandler(dup, got));
    OK(MPI_Comm_free(&dup));

    /* The program's own error classes, codes and strings. */
    {
        int myclass = -1, mycode = -1, trcode = -1, flag = 0, *last = NULL;
        OK(MPI_Add_error_class(&myclass));
        TRUE(myclass > MPI_ERR_LASTCODE);
        OK(MPI_Add_error_code(myclass, &mycode));
        OK(MPI_Add_error_code(MPI_ERR_TRUNCATE, &trcode));
        TRUE(mycode != myclass && trcode != mycode && trcode > MPI_ERR_LASTCODE);
        OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
        EQ(flag, 1);
        TRUE(*last >= myclass && *last >= mycode && *last >= trcode);
        OK(MPI_Error_class(mycode, &cls)); EQ(cls, myclass);
        OK(MPI_Error_class(myclass, &cls)); EQ(cls, myclass);
        OK(MPI_Error_class(trcode, &cls)); EQ(cls, MPI_ERR_TRUNCATE);
        OK(MPI_Error_string(mycode, s, &len)); EQ(len, 0); /* none set: "" */
        OK(MPI_Add_error_string(mycode, "my own failure"));
        OK(MPI_Add_error_string(myclass, "my own class"));
        OK(MPI_Error_string(mycode, s, &len));
        TRUE(strcmp(s, "my own failure") == 0); EQ(len, (int)strlen("my own failure"));
        OK(MPI_Error_string(myclass, s, &len)); TRUE(strcmp(s, "my own class") == 0);
        /* A standard code's string cannot change; a code no one added. */
        ERR(MPI_ERR_ARG, MPI_Add_error_string(MPI_ERR_OTHER, "no"));
        ERR(MPI_ERR_ARG, MPI_Add_error_code(mycode, &x)); /* a code is no class */
        ERR(MPI_ERR_ARG, MPI_Error_class(*last + 100, &cls));
        /* Raised through a user handler, which gets the code. */
        MPI_Comm d2;
        MPI_Errhandler h2;
        OK(MPI_Comm_dup(MPI_COMM_WORLD, &d2));
        OK(MPI_Comm_create_errhandler(handler, &h2));
        OK(MPI_Comm_set_errhandler(d2, h2));
        OK(MPI_Errhandler_free(&h2));
        called = 0;
        OK(MPI_Comm_call_errhandler(d2, mycode));
        EQ(called, 1); EQ(called_code, mycode); TRUE(called_comm == d2);
        OK(MPI_Comm_free(&d2));
        /* Removal (MPI 4.1): a class only once its codes are gone, and a
         * code or class only once its string is. */
        ERR(MPI_ERR_ARG, MPI_Remove_error_class(myclass));
        ERR(MPI_ERR_ARG, MPI_Remove_error_code(mycode)); /* its string first */
        OK(MPI_Remove_error_string(mycode));
        OK(MPI_Error_string(mycode, s, &len)); EQ(len, 0);
        OK(MPI_Remove_error_code(mycode));
        ERR(MPI_ERR_ARG, MPI_Error_class(mycode, &cls));
        ERR(MPI_ERR_ARG, MPI_Remove_error_class(myclass)); /* its string first */
        OK(MPI_Remove_error_string(myclass));
        OK(MPI_Remove_error_class(myclass));
        OK(MPI_Remove_error_code(trcode));
        ERR(MPI_ERR_ARG, MPI_Remove_error_class(myclass));
    }

    check_done("errors");
    return 0;
}
