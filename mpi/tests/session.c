/* session.c: sessions (MPI 4.0). Before MPI_Init: an error handler made,
 * a session started (MPI_Initialized stays 0), its process sets
 * (mpi://WORLD, mpi://SELF, mpi://shared) listed, their sizes, a
 * communicator made from a set's group and used; errors go to the
 * session's handler (MPI_ERRORS_RETURN, then the program's own, called
 * with the session's handle; MPI_Session_call_errhandler); handles as
 * integers; a buffer attached to the session serves MPI_Bsend, flushes
 * and detaches. Beside MPI_Init: a second session, then MPI_Init and
 * MPI_Finalize while the sessions live, and the session's communicator
 * still works after MPI_Finalize; the last MPI_Session_finalize ends MPI. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me = -1;
#define FAIL(...) do { fprintf(stderr, "FAIL %s:%d rank %d: ", __FILE__, __LINE__, me); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define OK(call) do { int rc_ = (call); if (rc_ != MPI_SUCCESS) FAIL("%s returned %d", #call, rc_); } while (0)
#define EQ(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
    if (a_ != b_) FAIL("%s == %lld, expected %s == %lld", #a, a_, #b, b_); } while (0)

static int calls = 0;
static MPI_Session seen = MPI_SESSION_NULL;
static void handler(MPI_Session *s, int *code, ...) {
    calls++;
    seen = *s;
    (void)code;
}

static int class_of(int rc) {
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

int main(void) {
    int flag = -1;
    OK(MPI_Initialized(&flag));
    EQ(flag, 0);
    MPI_Errhandler eh;
    OK(MPI_Session_create_errhandler(handler, &eh));
    MPI_Info info;
    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "thread_level", "MPI_THREAD_MULTIPLE"));
    MPI_Session s;
    OK(MPI_Session_init(info, MPI_ERRORS_RETURN, &s));
    OK(MPI_Info_free(&info));
    OK(MPI_Initialized(&flag));
    EQ(flag, 0);

    int n = 0;
    OK(MPI_Session_get_num_psets(s, MPI_INFO_NULL, &n));
    EQ(n, 3);
    const char *want[3] = {"mpi://WORLD", "mpi://SELF", "mpi://shared"};
    for (int i = 0; i < n; i++) {
        int len = 0;
        char name[64];
        OK(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, name));
        EQ(len, (int)strlen(want[i]) + 1);
        OK(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, name));
        if (strcmp(name, want[i])) FAIL("pset %d is %s, not %s", i, name, want[i]);
    }
    int len = 0;
    char name[8];
    EQ(class_of(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, 3, &len, name)), MPI_ERR_ARG);

    MPI_Group world, self, node;
    OK(MPI_Group_from_session_pset(s, "mpi://WORLD", &world));
    OK(MPI_Group_from_session_pset(s, "mpi://SELF", &self));
    OK(MPI_Group_from_session_pset(s, "mpi://shared", &node));
    int size, gsz, grank;
    OK(MPI_Group_size(world, &size));
    OK(MPI_Group_rank(world, &me));
    OK(MPI_Group_size(self, &gsz)); EQ(gsz, 1);
    OK(MPI_Group_size(node, &gsz));
    OK(MPI_Group_rank(node, &grank));
    if (gsz < 1 || gsz > size || grank == MPI_UNDEFINED) FAIL("node set: size %d rank %d", gsz, grank);
    MPI_Info pinfo;
    OK(MPI_Session_get_pset_info(s, "mpi://WORLD", &pinfo));
    char v[32];
    int vlen = sizeof v, found = 0;
    OK(MPI_Info_get_string(pinfo, "mpi_size", &vlen, v, &found));
    EQ(found, 1);
    EQ(atoi(v), size);
    OK(MPI_Info_free(&pinfo));
    MPI_Info used;
    OK(MPI_Session_get_info(s, &used));
    vlen = sizeof v;
    OK(MPI_Info_get_string(used, "thread_level", &vlen, v, &found));
    EQ(found, 1);
    if (strncmp(v, "MPI_THREAD_", 11)) FAIL("thread_level %s", v);
    OK(MPI_Info_free(&used));

    /* A communicator over the world set, without MPI_Init. */
    MPI_Comm comm;
    OK(MPI_Comm_create_from_group(world, "ferry.session.test", MPI_INFO_NULL, MPI_ERRORS_RETURN, &comm));
    int crank, csize, sum = 0;
    OK(MPI_Comm_rank(comm, &crank));
    OK(MPI_Comm_size(comm, &csize));
    EQ(crank, me); EQ(csize, size);
    OK(MPI_Allreduce(&crank, &sum, 1, MPI_INT, MPI_SUM, comm));
    EQ(sum, size * (size - 1) / 2);

    /* A session's buffer serves buffered sends on its communicator. */
    int bsize = 4 * (64 + MPI_BSEND_OVERHEAD);
    char *bbuf = malloc(bsize);
    OK(MPI_Session_attach_buffer(s, bbuf, bsize));
    int right = (crank + 1) % csize, left = (crank + csize - 1) % csize, bgot = -1;
    OK(MPI_Bsend(&crank, 1, MPI_INT, right, 9, comm));
    OK(MPI_Recv(&bgot, 1, MPI_INT, left, 9, comm, MPI_STATUS_IGNORE));
    EQ(bgot, left);
    OK(MPI_Session_flush_buffer(s));
    MPI_Request fr;
    OK(MPI_Session_iflush_buffer(s, &fr));
    OK(MPI_Wait(&fr, MPI_STATUS_IGNORE));
    void *back = NULL;
    int bsz = 0;
    OK(MPI_Session_detach_buffer(s, &back, &bsz));
    if (back != bbuf) FAIL("detach gave another buffer");
    EQ(bsz, bsize);
    free(bbuf);

    /* Errors go to the session's handler. */
    MPI_Group none;
    EQ(class_of(MPI_Group_from_session_pset(s, "mpi://nowhere", &none)), MPI_ERR_ARG);
    OK(MPI_Session_set_errhandler(s, eh));
    MPI_Errhandler got;
    OK(MPI_Session_get_errhandler(s, &got));
    OK(MPI_Errhandler_free(&got));
    EQ(class_of(MPI_Group_from_session_pset(s, "mpi://nowhere", &none)), MPI_ERR_ARG);
    EQ(calls, 1);
    if (seen != s) FAIL("the handler got another session");
    OK(MPI_Session_call_errhandler(s, MPI_ERR_OTHER));
    EQ(calls, 2);
    OK(MPI_Session_set_errhandler(s, MPI_ERRORS_RETURN));
    OK(MPI_Errhandler_free(&eh));
    if (MPI_Session_f2c(MPI_Session_c2f(s)) != s) FAIL("a session's int does not convert back");

    /* Beside MPI_Init: a second session, then the world model. */
    MPI_Session s2;
    OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s2));
    int provided;
    OK(MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided));
    OK(MPI_Initialized(&flag));
    EQ(flag, 1);
    int wsum = 0;
    OK(MPI_Allreduce(&me, &wsum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    EQ(wsum, sum);
    OK(MPI_Finalize());
    OK(MPI_Finalized(&flag));
    EQ(flag, 1);
    /* The session's communicator outlives the world model. */
    sum = 0;
    OK(MPI_Allreduce(&crank, &sum, 1, MPI_INT, MPI_SUM, comm));
    EQ(sum, size * (size - 1) / 2);
    OK(MPI_Comm_free(&comm));
    OK(MPI_Group_free(&world));
    OK(MPI_Group_free(&self));
    OK(MPI_Group_free(&node));
    OK(MPI_Session_finalize(&s2));
    if (s2 != MPI_SESSION_NULL) FAIL("a finalized session's handle is not MPI_SESSION_NULL");
    OK(MPI_Session_finalize(&s));
    if (me == 0) printf("PASS session\n");
    return 0;
}
