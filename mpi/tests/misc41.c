/* The small MPI 4.x calls: names of null handles, MPI_Pcontrol,
 * MPI_Dims_create, MPI_Info_create_env, MPI_Get_hw_resource_info,
 * MPI_Buffer_flush / MPI_Buffer_iflush, and buffers attached to a
 * communicator (MPI_Comm_attach_buffer, _detach_buffer, _flush_buffer,
 * _iflush_buffer); MPI 4.1's status field calls; MPI-1's attribute calls;
 * datatype attributes with their copy and delete callbacks. */
#include "check.h"
#include <string.h>
#include <unistd.h>

#define N 16

static void dims_are(int nnodes, int ndims, const int *in, const int *want) {
    int d[8];
    memcpy(d, in, sizeof(int) * ndims);
    OK(MPI_Dims_create(nnodes, ndims, d));
    for (int i = 0; i < ndims; i++) if (d[i] != want[i]) FAIL("Dims_create(%d): dims[%d] = %d, expected %d", nnodes, i, d[i], want[i]);
}

/* Bsends N ints to next on comm, then receives N from prev. */
static void ring_bsend(MPI_Comm comm, int tag, int flush) {
    int rank, size, out[N], in[N];
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int i = 0; i < N; i++) { out[i] = rank * 100 + i + tag; in[i] = -1; }
    OK(MPI_Bsend(out, N, MPI_INT, (rank + 1) % size, tag, comm));
    MPI_Request req = MPI_REQUEST_NULL;
    if (flush == 1) OK(comm == MPI_COMM_WORLD ? MPI_Buffer_flush() : MPI_Comm_flush_buffer(comm));
    if (flush == 2) OK(comm == MPI_COMM_WORLD ? MPI_Buffer_iflush(&req) : MPI_Comm_iflush_buffer(comm, &req));
    int prev = (rank + size - 1) % size;
    OK(MPI_Recv(in, N, MPI_INT, prev, tag, comm, MPI_STATUS_IGNORE));
    for (int i = 0; i < N; i++) EQ(in[i], prev * 100 + i + tag);
    if (flush == 2) {
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        TRUE(req == MPI_REQUEST_NULL);
    }
}

static int type_copies = 0, type_deletes = 0;
static int type_copy(MPI_Datatype t, int k, void *extra, void *in, void *out, int *flag) {
    (void)t; (void)k; (void)extra;
    type_copies++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}
static int type_delete(MPI_Datatype t, int k, void *val, void *extra) {
    (void)t; (void)k; (void)val; (void)extra;
    type_deletes++;
    return MPI_SUCCESS;
}

int main(int argc, char **argv) {
    /* Info_create_env before MPI_Init: the same values as after it. */
    MPI_Info before;
    char pre_procs[MPI_MAX_INFO_VAL], pre_level[MPI_MAX_INFO_VAL];
    int pre_flag = 0;
    if (MPI_Info_create_env(argc, argv, &before) != MPI_SUCCESS) return 1;
    MPI_Info_get(before, "maxprocs", MPI_MAX_INFO_VAL - 1, pre_procs, &pre_flag);
    if (!pre_flag) { fprintf(stderr, "FAIL: no maxprocs before MPI_Init\n"); return 1; }
    MPI_Info_get(before, "thread_level", MPI_MAX_INFO_VAL - 1, pre_level, &pre_flag);
    if (!pre_flag) { fprintf(stderr, "FAIL: no thread_level before MPI_Init\n"); return 1; }
    check_init(&argc, &argv);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    /* Null handles have names (MPI 4.1). */
    char name[MPI_MAX_OBJECT_NAME];
    int namelen;
    OK(MPI_Comm_get_name(MPI_COMM_NULL, name, &namelen));
    TRUE(strcmp(name, "MPI_COMM_NULL") == 0); EQ(namelen, 13);
    OK(MPI_Type_get_name(MPI_DATATYPE_NULL, name, &namelen));
    TRUE(strcmp(name, "MPI_DATATYPE_NULL") == 0);

    /* Pcontrol: nothing to do, any level, extra arguments ignored. */
    OK(MPI_Pcontrol(0));
    OK(MPI_Pcontrol(1));
    OK(MPI_Pcontrol(2, "ignored", 3));

    /* Dims_create: the standard's examples and balanced factors. */
    dims_are(6, 2, (int[]){0, 0}, (int[]){3, 2});
    dims_are(7, 2, (int[]){0, 0}, (int[]){7, 1});
    dims_are(6, 3, (int[]){0, 3, 0}, (int[]){2, 3, 1});
    dims_are(12, 3, (int[]){0, 0, 0}, (int[]){3, 2, 2});
    dims_are(16, 3, (int[]){0, 0, 0}, (int[]){4, 2, 2});
    dims_are(1, 2, (int[]){0, 0}, (int[]){1, 1});
    dims_are(8, 2, (int[]){2, 4}, (int[]){2, 4});
    int bad[3] = {0, 3, 0};
    ERR(MPI_ERR_DIMS, MPI_Dims_create(7, 3, bad));
    int neg[2] = {-1, 0};
    ERR(MPI_ERR_DIMS, MPI_Dims_create(4, 2, neg));

    /* Info_create_env: command, argv, maxprocs, host, ... */
    MPI_Info env;
    char value[MPI_MAX_INFO_VAL];
    int flag;
    OK(MPI_Info_create_env(argc, argv, &env));
    OK(MPI_Info_get(env, "command", MPI_MAX_INFO_VAL - 1, value, &flag));
    EQ(flag, 1);
    TRUE(strcmp(value, argv[0]) == 0);
    OK(MPI_Info_get(env, "maxprocs", MPI_MAX_INFO_VAL - 1, value, &flag));
    EQ(flag, 1); EQ(atoi(value), size);
    TRUE(strcmp(value, pre_procs) == 0);
    OK(MPI_Info_get(env, "host", MPI_MAX_INFO_VAL - 1, value, &flag));
    EQ(flag, 1); TRUE(strlen(value) > 0);
    OK(MPI_Info_get(env, "thread_level", MPI_MAX_INFO_VAL - 1, value, &flag));
    EQ(flag, 1); TRUE(strncmp(value, "MPI_THREAD_", 11) == 0);
    TRUE(strcmp(value, pre_level) == 0);
    OK(MPI_Info_free(&before));
    OK(MPI_Info_free(&env));
    OK(MPI_Info_create_env(0, NULL, &env));
    OK(MPI_Info_get(env, "command", MPI_MAX_INFO_VAL - 1, value, &flag));
    EQ(flag, 0);
    OK(MPI_Info_free(&env));

    /* Get_hw_resource_info: an info object the program frees. */
    MPI_Info hw;
    int nkeys = -1;
    OK(MPI_Get_hw_resource_info(&hw));
    TRUE(hw != MPI_INFO_NULL);
    OK(MPI_Info_get_nkeys(hw, &nkeys));
    TRUE(nkeys >= 0);
    OK(MPI_Info_free(&hw));

    /* The process's buffer: flush and iflush (and with none attached). */
    OK(MPI_Buffer_flush());
    MPI_Request r;
    OK(MPI_Buffer_iflush(&r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    static char pbuf[4 * (N * 4 + MPI_BSEND_OVERHEAD)];
    OK(MPI_Buffer_attach(pbuf, sizeof pbuf));
    ring_bsend(MPI_COMM_WORLD, 1, 1);
    ring_bsend(MPI_COMM_WORLD, 2, 2);
    ring_bsend(MPI_COMM_WORLD, 3, 0);
    void *addr;
    int len;
    OK(MPI_Buffer_detach(&addr, &len));
    TRUE(addr == pbuf); EQ(len, sizeof pbuf);

    /* An iflush waits for the messages buffered before it only: a large
     * buffered message to self, sent after it and not yet received, does
     * not hold it back. */
    OK(MPI_Buffer_attach(MPI_BUFFER_AUTOMATIC, 0));
    enum { BIG = 1 << 20 };
    static int big_out[BIG], big_in[BIG];
    for (int i = 0; i < BIG; i++) big_out[i] = i;
    OK(MPI_Buffer_iflush(&r));
    OK(MPI_Bsend(big_out, BIG, MPI_INT, 0, 11, MPI_COMM_SELF));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    OK(MPI_Recv(big_in, BIG, MPI_INT, 0, 11, MPI_COMM_SELF, MPI_STATUS_IGNORE));
    for (int i = 0; i < BIG; i += 4099) EQ(big_in[i], i);
    OK(MPI_Buffer_detach(&addr, &len));
    TRUE(addr == MPI_BUFFER_AUTOMATIC);

    /* A communicator's buffer serves its buffered sends; with no process
     * buffer, a buffered send on another communicator fails. */
    MPI_Comm dup;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    OK(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
    static char cbuf[2 * (N * 4 + MPI_BSEND_OVERHEAD)];
    OK(MPI_Comm_attach_buffer(dup, cbuf, sizeof cbuf));
    ERR(MPI_ERR_BUFFER, MPI_Comm_attach_buffer(dup, cbuf, sizeof cbuf));
    ring_bsend(dup, 4, 1);
    ring_bsend(dup, 5, 2);
    ring_bsend(dup, 6, 0);
    int x = 1;
    ERR(MPI_ERR_BUFFER, MPI_Bsend(&x, 1, MPI_INT, 0, 9, MPI_COMM_WORLD));
    OK(MPI_Comm_detach_buffer(dup, &addr, &len));
    TRUE(addr == cbuf); EQ(len, sizeof cbuf);
    /* Detached: nothing to give back; flushing does nothing. */
    OK(MPI_Comm_detach_buffer(dup, &addr, &len));
    TRUE(addr == NULL); EQ(len, 0);
    OK(MPI_Comm_flush_buffer(dup));
    ERR(MPI_ERR_BUFFER, MPI_Bsend(&x, 1, MPI_INT, 0, 9, dup));
    /* MPI_BUFFER_AUTOMATIC on a communicator; freeing the communicator
     * detaches it. */
    OK(MPI_Comm_attach_buffer(dup, MPI_BUFFER_AUTOMATIC, 0));
    ring_bsend(dup, 7, 2);
    OK(MPI_Comm_detach_buffer(dup, &addr, &len));
    TRUE(addr == MPI_BUFFER_AUTOMATIC);
    OK(MPI_Comm_attach_buffer(dup, MPI_BUFFER_AUTOMATIC, 0));
    ring_bsend(dup, 8, 0);
    OK(MPI_Comm_free(&dup));
    ERR(MPI_ERR_COMM, MPI_Comm_flush_buffer(MPI_COMM_NULL));

    /* MPI 4.1's status fields through calls; MPI_Status_set_elements_c. */
    MPI_Status st41;
    OK(MPI_Status_set_source(&st41, 3));
    OK(MPI_Status_set_tag(&st41, 44));
    OK(MPI_Status_set_error(&st41, MPI_ERR_TRUNCATE));
    OK(MPI_Status_set_elements_c(&st41, MPI_INT, 5));
    int f41 = -1;
    OK(MPI_Status_get_source(&st41, &f41)); EQ(f41, 3);
    OK(MPI_Status_get_tag(&st41, &f41)); EQ(f41, 44);
    OK(MPI_Status_get_error(&st41, &f41)); EQ(f41, MPI_ERR_TRUNCATE);
    OK(MPI_Get_count(&st41, MPI_INT, &f41)); EQ(f41, 5);

    /* MPI-1's attribute calls, deprecated but in the standard. */
    int kv, aval = 7, *aget = NULL, aflag = 0;
    OK(MPI_Keyval_create(MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN, &kv, NULL));
    OK(MPI_Attr_put(MPI_COMM_WORLD, kv, &aval));
    OK(MPI_Attr_get(MPI_COMM_WORLD, kv, &aget, &aflag));
    EQ(aflag, 1); TRUE(aget == &aval);
    OK(MPI_Attr_delete(MPI_COMM_WORLD, kv));
    OK(MPI_Attr_get(MPI_COMM_WORLD, kv, &aget, &aflag)); EQ(aflag, 0);
    OK(MPI_Keyval_free(&kv)); EQ(kv, MPI_KEYVAL_INVALID);

    /* Datatype attributes: copied by MPI_Type_dup, deleted by
     * MPI_Type_delete_attr and MPI_Type_free, callbacks run. */
    int tk, tval = 11, *tget = NULL, tflag = 0;
    MPI_Datatype t1, t2;
    OK(MPI_Type_create_keyval(type_copy, type_delete, &tk, NULL));
    OK(MPI_Type_contiguous(2, MPI_INT, &t1));
    OK(MPI_Type_set_attr(t1, tk, &tval));
    OK(MPI_Type_dup(t1, &t2));
    EQ(type_copies, 1);
    OK(MPI_Type_get_attr(t2, tk, &tget, &tflag));
    EQ(tflag, 1); TRUE(tget == &tval);
    OK(MPI_Type_delete_attr(t1, tk));
    EQ(type_deletes, 1);
    OK(MPI_Type_get_attr(t1, tk, &tget, &tflag)); EQ(tflag, 0);
    OK(MPI_Type_free(&t2));
    EQ(type_deletes, 2);
    OK(MPI_Type_set_attr(MPI_INT, tk, &tval));
    OK(MPI_Type_get_attr(MPI_INT, tk, &tget, &tflag)); EQ(tflag, 1);
    OK(MPI_Type_delete_attr(MPI_INT, tk));
    OK(MPI_Type_free(&t1));
    OK(MPI_Type_free_keyval(&tk)); EQ(tk, MPI_KEYVAL_INVALID);

    check_done("misc41");
    return 0;
}
