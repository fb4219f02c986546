/* rma.c: one-sided communication. Windows by MPI_Win_allocate (ferry's
 * memory) and MPI_Win_create (the program's), with displacement units of
 * 8 and 4; in fence epochs: puts and gets of ints (strided origin, vector
 * target), accumulates (sum, max, replace) of doubles, get_accumulate,
 * Rput/Rget/Raccumulate/Rget_accumulate requests mixed with a receive in
 * one MPI_Waitall; passive target: fetch-and-add from every rank under
 * MPI_Win_lock_all (each value handed out once), a compare-and-swap spin
 * lock around a get/put increment, exclusive locks around another, shared
 * locks, flush and flush_local; post/start/complete/wait and test on a
 * ring; MPI_PROC_NULL targets; the predefined attributes, a user
 * attribute with its delete callback, name, group, info; under
 * MPI_ERRORS_RETURN on the window: an operation outside an epoch
 * (MPI_ERR_RMA_SYNC), past the window (MPI_ERR_RMA_RANGE), a bad lock type
 * (MPI_ERR_LOCKTYPE), a bad assertion (MPI_ERR_ASSERT), a negative
 * displacement (MPI_ERR_DISP); MPI_Win_free leaves MPI_WIN_NULL. A
 * dynamic window: attached pieces addressed by MPI_Get_address, a get
 * past them refused (MPI_ERR_RMA_CONFLICT). A shared window on the node:
 * parts loaded and stored directly through MPI_Win_shared_query's
 * addresses, an empty part, MPI_PROC_NULL's query, a put. */
#include "check.h"
#include <string.h>

static int deleted;
static int on_delete(MPI_Win w, int k, void *v, void *extra) {
    (void)w; (void)k; (void)extra;
    deleted += *(int *)v;
    return MPI_SUCCESS;
}

int main(int argc, char **argv) {
    check_init(&argc, &argv);
    int me = check_rank, n;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int right = (me + 1) % n, left = (me + n - 1) % n;

    /* A window of n * 8 ints by MPI_Win_create, displacement unit 4. */
    int *mem = calloc((size_t)n * 8, sizeof(int));
    MPI_Win w;
    OK(MPI_Win_create(mem, (MPI_Aint)(n * 8 * sizeof(int)), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w));
    OK(MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN));
    int one = 1;
    ERR(MPI_ERR_RMA_SYNC, MPI_Put(&one, 1, MPI_INT, right, 0, 1, MPI_INT, w));

    /* Fence: every rank puts 8 ints into its block of every other's
     * window, from a strided origin (every other int of 16). */
    int src[16];
    for (int k = 0; k < 16; k++) src[k] = k % 2 ? -1 : 100 * me + k / 2;
    MPI_Datatype strided;
    OK(MPI_Type_vector(8, 1, 2, MPI_INT, &strided));
    OK(MPI_Type_commit(&strided));
    OK(MPI_Win_fence(MPI_MODE_NOPRECEDE, w));
    for (int t = 0; t < n; t++) OK(MPI_Put(src, 1, strided, t, me * 8, 8, MPI_INT, w));
    OK(MPI_Win_fence(0, w));
    for (int o = 0; o < n; o++)
        for (int k = 0; k < 8; k++) EQ(mem[o * 8 + k], 100 * o + k);
    /* Gets: the right neighbour's block of mine, whole; then every other
     * int of it through a vector target type into a contiguous origin. */
    int got[8], half[4];
    OK(MPI_Get(got, 8, MPI_INT, right, me * 8, 8, MPI_INT, w));
    MPI_Datatype pick;
    OK(MPI_Type_vector(4, 1, 2, MPI_INT, &pick));
    OK(MPI_Type_commit(&pick));
    OK(MPI_Get(half, 4, MPI_INT, right, me * 8, 1, pick, w));
    ERR(MPI_ERR_RMA_RANGE, MPI_Get(got, 8, MPI_INT, right, n * 8 - 4, 8, MPI_INT, w));
    ERR(MPI_ERR_DISP, MPI_Get(got, 1, MPI_INT, right, -1, 1, MPI_INT, w));
    OK(MPI_Get(got, 8, MPI_INT, MPI_PROC_NULL, 0, 8, MPI_INT, w));
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, w));
    for (int k = 0; k < 8; k++) EQ(got[k], 100 * me + k);
    for (int k = 0; k < 4; k++) EQ(half[k], 100 * me + 2 * k);
    ERR(MPI_ERR_ASSERT, MPI_Win_fence(1, w));

    /* Attributes and names. */
    void *base; MPI_Aint *size; int *unit, *flavor, *model, flag;
    OK(MPI_Win_get_attr(w, MPI_WIN_BASE, &base, &flag)); TRUE(flag && base == mem);
    OK(MPI_Win_get_attr(w, MPI_WIN_SIZE, &size, &flag)); EQ(*size, n * 8 * (int)sizeof(int));
    OK(MPI_Win_get_attr(w, MPI_WIN_DISP_UNIT, &unit, &flag)); EQ(*unit, 4);
    OK(MPI_Win_get_attr(w, MPI_WIN_CREATE_FLAVOR, &flavor, &flag)); EQ(*flavor, MPI_WIN_FLAVOR_CREATE);
    OK(MPI_Win_get_attr(w, MPI_WIN_MODEL, &model, &flag)); EQ(*model, MPI_WIN_UNIFIED);
    int key, val = 5;
    OK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, on_delete, &key, NULL));
    OK(MPI_Win_set_attr(w, key, &val));
    int *back;
    OK(MPI_Win_get_attr(w, key, &back, &flag)); TRUE(flag && back == &val);
    char name[MPI_MAX_OBJECT_NAME]; int len;
    OK(MPI_Win_set_name(w, "ints"));
    OK(MPI_Win_get_name(w, name, &len)); TRUE(strcmp(name, "ints") == 0 && len == 4);
    OK(MPI_Win_get_name(MPI_WIN_NULL, name, &len)); TRUE(strcmp(name, "MPI_WIN_NULL") == 0);
    MPI_Group g, wg; int cmp;
    OK(MPI_Win_get_group(w, &g));
    OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    OK(MPI_Group_compare(g, wg, &cmp)); EQ(cmp, MPI_IDENT);
    OK(MPI_Group_free(&g));
    MPI_Info info;
    OK(MPI_Win_get_info(w, &info));
    OK(MPI_Info_free(&info));

    /* Post/start/complete/wait on a ring, then with MPI_Win_test. */
    MPI_Group lg, rg;
    OK(MPI_Group_incl(wg, 1, &left, &lg));
    OK(MPI_Group_incl(wg, 1, &right, &rg));
    for (int round = 0; round < 2; round++) {
        int v = 1000 * round + me;
        OK(MPI_Win_post(lg, 0, w));
        OK(MPI_Win_start(rg, 0, w));
        OK(MPI_Put(&v, 1, MPI_INT, right, n * 8 - 1, 1, MPI_INT, w));
        OK(MPI_Win_complete(w));
        if (round == 0) {
            flag = 0;
            while (!flag) OK(MPI_Win_test(w, &flag));
        } else {
            OK(MPI_Win_wait(w));
        }
        EQ(mem[n * 8 - 1], 1000 * round + left);
    }
    OK(MPI_Group_free(&lg)); OK(MPI_Group_free(&rg)); OK(MPI_Group_free(&wg));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Win_free(&w));
    TRUE(w == MPI_WIN_NULL);
    EQ(deleted, 5);
    OK(MPI_Win_free_keyval(&key));
    free(mem);

    /* A window of doubles by MPI_Win_allocate, displacement unit 8. */
    double *d;
    OK(MPI_Win_allocate((MPI_Aint)(16 * sizeof(double)), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &d, &w));
    OK(MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN));
    OK(MPI_Win_get_attr(w, MPI_WIN_CREATE_FLAVOR, &flavor, &flag)); EQ(*flavor, MPI_WIN_FLAVOR_ALLOCATE);
    OK(MPI_Win_get_attr(w, MPI_WIN_BASE, &base, &flag)); TRUE(base == d);
    TRUE(((size_t)d & 15) == 0);
    for (int k = 0; k < 16; k++) d[k] = 0;
    OK(MPI_Win_fence(0, w));
    double two[2] = {1.5, (double)me};
    OK(MPI_Accumulate(two, 2, MPI_DOUBLE, 0, 0, 2, MPI_DOUBLE, MPI_SUM, w));
    OK(MPI_Accumulate(&two[1], 1, MPI_DOUBLE, 0, 2, 1, MPI_DOUBLE, MPI_MAX, w));
    double old[2];
    MPI_Request r[4];
    int msg = -1, sent = me;
    OK(MPI_Irecv(&msg, 1, MPI_INT, left, 9, MPI_COMM_WORLD, &r[0]));
    OK(MPI_Rput(&two[0], 1, MPI_DOUBLE, right, 5, 1, MPI_DOUBLE, w, &r[1]));
    OK(MPI_Raccumulate(&two[1], 1, MPI_DOUBLE, right, 6, 1, MPI_DOUBLE, MPI_REPLACE, w, &r[2]));
    OK(MPI_Send(&sent, 1, MPI_INT, right, 9, MPI_COMM_WORLD));
    OK(MPI_Waitall(3, r, MPI_STATUSES_IGNORE));
    EQ(msg, left);
    OK(MPI_Win_fence(0, w));
    if (me == 0) {
        EQ(d[0], 1.5 * n);
        EQ(d[1], n * (n - 1) / 2.0);
        EQ(d[2], n - 1.0);
    }
    EQ(d[5], 1.5); EQ(d[6], (double)left);
    OK(MPI_Rget_accumulate(two, 2, MPI_DOUBLE, old, 2, MPI_DOUBLE, 0, 0, 2, MPI_DOUBLE, MPI_NO_OP, w, &r[3]));
    OK(MPI_Rget(&two[0], 1, MPI_DOUBLE, right, 6, 1, MPI_DOUBLE, w, &r[0]));
    OK(MPI_Waitall(1, &r[3], MPI_STATUSES_IGNORE));
    OK(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
    EQ(old[0], 1.5 * n); EQ(two[0], (double)me);
    OK(MPI_Win_fence(0, w));

    /* Passive target: fetch-and-add on rank 0, every rank, 50 times. */
    long long *fadd = (long long *)&d[8], mine[50], inc = 1;
    OK(MPI_Win_lock_all(MPI_MODE_NOCHECK, w));
    for (int i = 0; i < 50; i++) {
        OK(MPI_Fetch_and_op(&inc, &mine[i], MPI_LONG_LONG, 0, 8, MPI_SUM, w));
        OK(MPI_Win_flush(0, w));
    }
    /* A compare-and-swap lock on the last rank guards an increment. */
    long long free_ = 0, mark = me + 1, was, count;
    for (int i = 0; i < 10; i++) {
        do {
            OK(MPI_Compare_and_swap(&mark, &free_, &was, MPI_LONG_LONG, n - 1, 9, w));
            OK(MPI_Win_flush(n - 1, w));
        } while (was != 0);
        OK(MPI_Get(&count, 1, MPI_LONG_LONG, n - 1, 10, 1, MPI_LONG_LONG, w));
        OK(MPI_Win_flush_local(n - 1, w));
        count++;
        OK(MPI_Put(&count, 1, MPI_LONG_LONG, n - 1, 10, 1, MPI_LONG_LONG, w));
        OK(MPI_Win_flush(n - 1, w));
        OK(MPI_Compare_and_swap(&free_, &mark, &was, MPI_LONG_LONG, n - 1, 9, w));
        OK(MPI_Win_flush_all(w));
        EQ(was, mark);
    }
    OK(MPI_Win_unlock_all(w));
    long long everyone[50 * 64];
    TRUE(n <= 64);
    OK(MPI_Allgather(mine, 50, MPI_LONG_LONG, everyone, 50, MPI_LONG_LONG, MPI_COMM_WORLD));
    for (int v = 0; v < 50 * n; v++) {
        int seen = 0;
        for (int i = 0; i < 50 * n; i++) seen += everyone[i] == v;
        EQ(seen, 1);
    }
    /* Exclusive locks guard another increment on rank 0. */
    for (int i = 0; i < 10; i++) {
        OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w));
        OK(MPI_Get(&count, 1, MPI_LONG_LONG, 0, 11, 1, MPI_LONG_LONG, w));
        OK(MPI_Win_flush(0, w));
        count++;
        OK(MPI_Put(&count, 1, MPI_LONG_LONG, 0, 11, 1, MPI_LONG_LONG, w));
        OK(MPI_Win_unlock(0, w));
    }
    ERR(MPI_ERR_RMA_SYNC, MPI_Win_unlock(0, w));
    ERR(MPI_ERR_LOCKTYPE, MPI_Win_lock(7, 0, 0, w));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w));
    if (me == 0) { EQ(*fadd, 50 * n); EQ(*(long long *)&d[11], 10 * n); }
    if (me == n - 1) EQ(*(long long *)&d[10], 10 * n);
    OK(MPI_Win_unlock(me, w));
    OK(MPI_Win_free(&w));

    /* A dynamic window: each rank attaches 4 ints and tells the others
     * their address; puts land there, a get past them is refused. */
    int piece[4] = {0, 0, 0, 0}, peek[4];
    MPI_Aint mine_at, *at = malloc(sizeof(MPI_Aint) * (size_t)n);
    OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w));
    OK(MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN));
    OK(MPI_Win_get_attr(w, MPI_WIN_CREATE_FLAVOR, &flavor, &flag)); EQ(*flavor, MPI_WIN_FLAVOR_DYNAMIC);
    OK(MPI_Win_attach(w, piece, sizeof piece));
    OK(MPI_Get_address(piece, &mine_at));
    OK(MPI_Allgather(&mine_at, 1, MPI_AINT, at, 1, MPI_AINT, MPI_COMM_WORLD));
    OK(MPI_Win_fence(0, w));
    int four[4] = {me, me + 1, me + 2, me + 3};
    OK(MPI_Put(four, 4, MPI_INT, right, at[right], 4, MPI_INT, w));
    OK(MPI_Win_fence(0, w));
    for (int k = 0; k < 4; k++) EQ(piece[k], left + k);
    MPI_Request bad;
    OK(MPI_Rget(peek, 4, MPI_INT, right, at[right] + 8, 4, MPI_INT, w, &bad));
    ERR(MPI_ERR_RMA_CONFLICT, MPI_Wait(&bad, MPI_STATUS_IGNORE));
    OK(MPI_Win_fence(0, w));
    OK(MPI_Win_detach(w, piece));
    OK(MPI_Win_free(&w));
    free(at);

    /* A shared window on the node's ranks: rank 0's part is empty (so
     * MPI_PROC_NULL's query gives rank 1's, where there is one); each
     * part is loaded and stored directly through its queried address, and
     * reached by MPI_Put too. */
    MPI_Comm node;
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    int nn, nme;
    MPI_Comm_size(node, &nn);
    MPI_Comm_rank(node, &nme);
    int *part;
    MPI_Aint psize = nme == 0 ? 0 : 4 * sizeof(int);
    OK(MPI_Win_allocate_shared(psize, sizeof(int), MPI_INFO_NULL, node, &part, &w));
    OK(MPI_Win_get_attr(w, MPI_WIN_CREATE_FLAVOR, &flavor, &flag)); EQ(*flavor, MPI_WIN_FLAVOR_SHARED);
    for (int k = 0; nme > 0 && k < 4; k++) part[k] = 10 * nme + k;
    OK(MPI_Win_fence(0, w));
    for (int r = 1; r < nn; r++) {
        MPI_Aint qs; int qu; int *qp;
        OK(MPI_Win_shared_query(w, r, &qs, &qu, &qp));
        EQ(qs, 4 * (int)sizeof(int)); EQ(qu, (int)sizeof(int));
        for (int k = 0; k < 4; k++) EQ(qp[k], 10 * r + k);
    }
    if (nn > 1) {
        MPI_Aint qs; int qu; int *qp;
        OK(MPI_Win_shared_query(w, MPI_PROC_NULL, &qs, &qu, &qp));
        EQ(qs, 4 * (int)sizeof(int)); EQ(qp[0], 10);
    }
    OK(MPI_Win_fence(0, w)); /* the loads above are done before any put */
    if (nn > 1) {
        int mark = 100 + nme;
        OK(MPI_Put(&mark, 1, MPI_INT, nn - 1, 3, 1, MPI_INT, w));
    }
    OK(MPI_Win_fence(0, w));
    if (nme == nn - 1 && nn > 1) {
        int seen = part[3];
        TRUE(seen >= 100 && seen < 100 + nn);
    }
    OK(MPI_Win_free(&w));
    OK(MPI_Comm_free(&node));

    check_done("rma");
    return 0;
}
