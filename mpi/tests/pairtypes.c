/* The padded pair types (MPI_DOUBLE_INT, MPI_LONG_INT, MPI_SHORT_INT,
 * MPI_LONG_DOUBLE_INT) are the struct {value; int} (MPI 4.1 §6.9.4): their
 * size is the members' (12, 12, 6, 20), their extent the C struct's (16,
 * 16, 8, 32). Checks the queries, types derived from them, what a message
 * of them carries (only the data: a receive as MPI_BYTE sees it packed),
 * that a receive never writes the padding (filled with a sentinel), the
 * counts of whole and partial messages, Pack/Unpack, and MAXLOC/MINLOC in
 * every reduction form across ranks. */
#include "check.h"
#include <stddef.h>
#include <string.h>

#define SENT 0xA5 /* what padding holds before and after every receive */
#define N 5       /* pairs per message or reduction */

/* A pair type as C lays it out. */
typedef struct {
    const char *name;
    MPI_Datatype t;
    size_t vsz;  /* bytes of the value */
    size_t ioff; /* offset of the int */
    size_t ext;  /* sizeof the struct */
    void (*set)(unsigned char *, double);
    double (*get)(const unsigned char *);
} pair_t;

#define ACCESS(T, NAME) \
    static void set_##NAME(unsigned char *p, double v) { T x = (T)v; memcpy(p, &x, sizeof x); } \
    static double get_##NAME(const unsigned char *p) { T x; memcpy(&x, p, sizeof x); return (double)x; }
ACCESS(double, d)
ACCESS(long, l)
ACCESS(short, s)
ACCESS(long double, ld)

struct di { double v; int i; };
struct li { long v; int i; };
struct si { short v; int i; };
struct ldi { long double v; int i; };

#define PAIR(T, S, NAME) \
    {#T, T, sizeof(((struct S *)0)->v), offsetof(struct S, i), sizeof(struct S), set_##NAME, get_##NAME}
static pair_t pairs[4];

static int rank, size;

/* Packed bytes of one pair: the value, then the int. */
static size_t packed(const pair_t *p) { return p->vsz + sizeof(int); }

/* n pairs at `buf`, every byte SENT first (so padding holds it). */
static unsigned char *fresh(const pair_t *p, int n) {
    unsigned char *b = malloc(p->ext * (size_t)(n > 0 ? n : 1));
    TRUE(b != NULL);
    memset(b, SENT, p->ext * (size_t)(n > 0 ? n : 1));
    return b;
}
static void put(const pair_t *p, unsigned char *b, int k, double v, int i) {
    p->set(b + (size_t)k * p->ext, v);
    memcpy(b + (size_t)k * p->ext + p->ioff, &i, sizeof i);
}
static double val(const pair_t *p, const unsigned char *b, int k) { return p->get(b + (size_t)k * p->ext); }
static int idx(const pair_t *p, const unsigned char *b, int k) {
    int i;
    memcpy(&i, b + (size_t)k * p->ext + p->ioff, sizeof i);
    return i;
}
/* The padding of n pairs (between the value and the int, and after the
 * int) still holds SENT. */
static void pads_intact(const pair_t *p, const unsigned char *b, int n, const char *what) {
    for (int k = 0; k < n; k++) {
        const unsigned char *e = b + (size_t)k * p->ext;
        for (size_t j = p->vsz; j < p->ext; j++) {
            if (j >= p->ioff && j < p->ioff + sizeof(int)) continue;
            if (e[j] != SENT) FAIL("%s %s: pair %d padding byte %zu is %#x", p->name, what, k, j, e[j]);
        }
    }
}

static void queries(const pair_t *p, int size_want, int ext_want, int true_want) {
    int s;
    MPI_Count sx, lbx, extx;
    MPI_Aint lb, ext;
    OK(MPI_Type_size(p->t, &s)); EQ(s, size_want);
    OK(MPI_Type_size_x(p->t, &sx)); EQ(sx, size_want);
    OK(MPI_Type_get_extent(p->t, &lb, &ext)); EQ(lb, 0); EQ(ext, ext_want); EQ(ext, p->ext);
    OK(MPI_Type_get_extent_x(p->t, &lbx, &extx)); EQ(lbx, 0); EQ(extx, ext_want);
    OK(MPI_Type_get_true_extent(p->t, &lb, &ext)); EQ(lb, 0); EQ(ext, true_want);
    OK(MPI_Type_get_true_extent_x(p->t, &lbx, &extx)); EQ(lbx, 0); EQ(extx, true_want);
    EQ(size_want, packed(p));
    EQ(true_want, p->ioff + sizeof(int));
}

/* A type's size, extent and true extent. */
static void shape(MPI_Datatype t, int size_want, MPI_Aint lb_want, MPI_Aint ext_want, MPI_Aint tlb_want,
                  MPI_Aint text_want) {
    int s;
    MPI_Aint lb, ext;
    OK(MPI_Type_size(t, &s)); EQ(s, size_want);
    OK(MPI_Type_get_extent(t, &lb, &ext)); EQ(lb, lb_want); EQ(ext, ext_want);
    OK(MPI_Type_get_true_extent(t, &lb, &ext)); EQ(lb, tlb_want); EQ(ext, text_want);
}

static void derived(void) {
    MPI_Datatype c, v, st, sc, mine;
    /* 3 contiguous DOUBLE_INTs: 36 bytes of data over 48, the last int
     * ending at 44. */
    OK(MPI_Type_contiguous(3, MPI_DOUBLE_INT, &c));
    shape(c, 36, 0, 48, 0, 44);
    /* vector(2, 1, 2): pairs 0 and 2. */
    OK(MPI_Type_vector(2, 1, 2, MPI_DOUBLE_INT, &v));
    shape(v, 24, 0, 48, 0, 44);
    /* struct {DOUBLE_INT at 0, SHORT_INT at 16}: aligned to 8. */
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {0, 16};
    MPI_Datatype ts[2] = {MPI_DOUBLE_INT, MPI_SHORT_INT};
    OK(MPI_Type_create_struct(2, bl, disp, ts, &st));
    shape(st, 18, 0, 24, 0, 24);
    /* 2 SHORT_INTs: the last int fills the extent. */
    OK(MPI_Type_contiguous(2, MPI_SHORT_INT, &sc));
    shape(sc, 12, 0, 16, 0, 16);
    /* The struct the program would build itself has the same shape. */
    MPI_Aint d2[2] = {offsetof(struct di, v), offsetof(struct di, i)};
    MPI_Datatype t2[2] = {MPI_DOUBLE, MPI_INT};
    OK(MPI_Type_create_struct(2, bl, d2, t2, &mine));
    shape(mine, 12, 0, 16, 0, 12);
    /* Sent as 3 contiguous DOUBLE_INTs, received as 2 of the vector
     * (pairs 0 and 2, then 3 and 5: its extent is 3 pairs): 36 bytes
     * fill pairs 0, 2 and 3. */
    OK(MPI_Type_commit(&c)); OK(MPI_Type_commit(&v)); OK(MPI_Type_commit(&sc));
    const pair_t *p = &pairs[0];
    unsigned char *out = fresh(p, 3), *in = fresh(p, 6);
    for (int k = 0; k < 3; k++) put(p, out, k, 10 * rank + k, -k);
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    MPI_Status st_;
    OK(MPI_Sendrecv(out, 1, c, to, 7, in, 2, v, from, 7, MPI_COMM_WORLD, &st_));
    int n;
    OK(MPI_Get_count(&st_, v, &n)); EQ(n, MPI_UNDEFINED); /* 1.5 vectors */
    OK(MPI_Get_elements(&st_, v, &n)); EQ(n, 6);
    OK(MPI_Get_count(&st_, MPI_DOUBLE_INT, &n)); EQ(n, 3);
    const int at[3] = {0, 2, 3}, hole[3] = {1, 4, 5};
    for (int k = 0; k < 3; k++) {
        TRUE(val(p, in, at[k]) == 10 * from + k); EQ(idx(p, in, at[k]), -k);
        for (size_t j = 0; j < p->ext; j++) EQ(in[hole[k] * p->ext + j], SENT);
    }
    pads_intact(p, in, 6, "vector receive");
    /* 2 SHORT_INTs as one contiguous type. */
    const pair_t *s = &pairs[2];
    unsigned char *so = fresh(s, 2), *si = fresh(s, 2);
    put(s, so, 0, -3, 30); put(s, so, 1, 4, 40);
    OK(MPI_Sendrecv(so, 1, sc, to, 8, si, 1, sc, from, 8, MPI_COMM_WORLD, &st_));
    OK(MPI_Get_elements(&st_, sc, &n)); EQ(n, 4);
    TRUE(val(s, si, 0) == -3 && val(s, si, 1) == 4); EQ(idx(s, si, 0), 30); EQ(idx(s, si, 1), 40);
    pads_intact(s, si, 2, "contiguous receive");
    free(out); free(in); free(so); free(si);
    MPI_Type_free(&c); MPI_Type_free(&v); MPI_Type_free(&st); MPI_Type_free(&sc); MPI_Type_free(&mine);
}

/* Pack, Pack_size, Unpack: the packed form is the parts back to back. */
static void packing(const pair_t *p) {
    int ps;
    OK(MPI_Pack_size(N, p->t, MPI_COMM_WORLD, &ps));
    EQ(ps, N * packed(p));
    unsigned char *src = fresh(p, N), *dst = fresh(p, N), buf[N * 32];
    for (int k = 0; k < N; k++) put(p, src, k, k - 2, 100 + k);
    int pos = 0;
    OK(MPI_Pack(src, N, p->t, buf, sizeof buf, &pos, MPI_COMM_WORLD));
    EQ(pos, N * packed(p));
    for (int k = 0; k < N; k++) {
        TRUE(p->get(buf + k * packed(p)) == k - 2);
        int i;
        memcpy(&i, buf + k * packed(p) + p->vsz, sizeof i);
        EQ(i, 100 + k);
    }
    pos = 0;
    OK(MPI_Unpack(buf, sizeof buf, &pos, dst, N, p->t, MPI_COMM_WORLD));
    EQ(pos, N * packed(p));
    for (int k = 0; k < N; k++) { TRUE(val(p, dst, k) == k - 2); EQ(idx(p, dst, k), 100 + k); }
    pads_intact(p, dst, N, "unpack");
    free(src); free(dst);
}

/* Received n pairs sent as `base + k`, index `-k` (from `from`). */
static void got(const pair_t *p, const unsigned char *b, int n, int from, const char *what) {
    for (int k = 0; k < n; k++) {
        if (val(p, b, k) != from * 10 + k || idx(p, b, k) != -k)
            FAIL("%s %s: pair %d is (%g, %d), expected (%d, %d)", p->name, what, k, val(p, b, k), idx(p, b, k),
                 from * 10 + k, -k);
    }
    pads_intact(p, b, n, what);
}

static void counts(const pair_t *p, MPI_Status *st, int bytes) {
    int n;
    MPI_Count x;
    OK(MPI_Get_count(st, MPI_BYTE, &n)); EQ(n, bytes);
    OK(MPI_Get_count(st, p->t, &n)); EQ(n, bytes / packed(p));
    OK(MPI_Get_elements(st, p->t, &n)); EQ(n, 2 * (bytes / packed(p)));
    OK(MPI_Get_elements_x(st, p->t, &x)); EQ(x, 2 * (bytes / packed(p)));
}

static void p2p(const pair_t *p) {
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    unsigned char *out = fresh(p, N), *in = fresh(p, N), bytes[N * 32 + 8];
    for (int k = 0; k < N; k++) put(p, out, k, rank * 10 + k, -k);
    MPI_Request r, s;
    MPI_Status st;

    /* Blocking send, nonblocking receive. */
    OK(MPI_Irecv(in, N, p->t, from, 1, MPI_COMM_WORLD, &r));
    OK(MPI_Send(out, N, p->t, to, 1, MPI_COMM_WORLD));
    OK(MPI_Wait(&r, &st));
    got(p, in, N, from, "Send/Irecv"); counts(p, &st, N * packed(p));

    /* Nonblocking send, blocking receive. */
    memset(in, SENT, N * p->ext);
    OK(MPI_Isend(out, N, p->t, to, 2, MPI_COMM_WORLD, &s));
    OK(MPI_Recv(in, N, p->t, from, 2, MPI_COMM_WORLD, &st));
    OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
    got(p, in, N, from, "Isend/Recv"); counts(p, &st, N * packed(p));

    /* Persistent, started twice with new data. */
    MPI_Request pr[2];
    OK(MPI_Recv_init(in, N, p->t, from, 3, MPI_COMM_WORLD, &pr[0]));
    OK(MPI_Send_init(out, N, p->t, to, 3, MPI_COMM_WORLD, &pr[1]));
    for (int round = 0; round < 2; round++) {
        memset(in, SENT, N * p->ext);
        OK(MPI_Startall(2, pr));
        MPI_Status sts[2];
        OK(MPI_Waitall(2, pr, sts));
        got(p, in, N, from, "persistent"); counts(p, &sts[0], N * packed(p));
    }
    MPI_Request_free(&pr[0]); MPI_Request_free(&pr[1]);

    /* Sent as the pair type, received as bytes: only the data, packed. */
    OK(MPI_Irecv(bytes, sizeof bytes, MPI_BYTE, from, 4, MPI_COMM_WORLD, &r));
    OK(MPI_Send(out, 2, p->t, to, 4, MPI_COMM_WORLD));
    OK(MPI_Wait(&r, &st));
    int n;
    OK(MPI_Get_count(&st, MPI_BYTE, &n)); EQ(n, 2 * packed(p));
    for (int k = 0; k < 2; k++) {
        TRUE(p->get(bytes + k * packed(p)) == from * 10 + k);
        int i;
        memcpy(&i, bytes + k * packed(p) + p->vsz, sizeof i);
        EQ(i, -k);
    }

    /* Sent as bytes (the packed form), received as the pair type; probed
     * first. */
    memset(bytes, 0, sizeof bytes);
    for (int k = 0; k < N; k++) {
        int i = -k;
        p->set(bytes + k * packed(p), rank * 10 + k);
        memcpy(bytes + k * packed(p) + p->vsz, &i, sizeof i);
    }
    memset(in, SENT, N * p->ext);
    OK(MPI_Isend(bytes, N * packed(p), MPI_BYTE, to, 5, MPI_COMM_WORLD, &s));
    OK(MPI_Probe(from, 5, MPI_COMM_WORLD, &st));
    OK(MPI_Get_count(&st, p->t, &n)); EQ(n, N);
    OK(MPI_Recv(in, N, p->t, from, 5, MPI_COMM_WORLD, &st));
    OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
    got(p, in, N, from, "bytes received as pairs"); counts(p, &st, N * packed(p));

    /* Partial pairs: the value of a pair without its int, then one pair
     * and the next value. Get_count is MPI_UNDEFINED, Get_elements counts
     * the basic elements that arrived; nothing past them is written. */
    int partial[2] = {(int)p->vsz, (int)(packed(p) + p->vsz)};
    for (int j = 0; j < 2; j++) {
        memset(in, SENT, N * p->ext);
        OK(MPI_Isend(bytes, partial[j], MPI_BYTE, to, 6, MPI_COMM_WORLD, &s));
        OK(MPI_Recv(in, N, p->t, from, 6, MPI_COMM_WORLD, &st));
        OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
        MPI_Count x;
        OK(MPI_Get_count(&st, p->t, &n)); EQ(n, MPI_UNDEFINED);
        OK(MPI_Get_elements(&st, p->t, &n)); EQ(n, 2 * j + 1);
        OK(MPI_Get_elements_x(&st, p->t, &x)); EQ(x, 2 * j + 1);
        TRUE(val(p, in, j) == from * 10 + j);
        if (j == 1) { TRUE(val(p, in, 0) == from * 10); EQ(idx(p, in, 0), 0); }
        for (size_t b = p->ioff; b < p->ext; b++) EQ(in[j * p->ext + b], SENT);
        for (size_t b = (size_t)(j + 1) * p->ext; b < N * p->ext; b++) EQ(in[b], SENT);
        pads_intact(p, in, N, "partial receive");
    }
    /* A partial pair in the elements' own terms (8 bytes of a DOUBLE_INT
     * is its double). */
    if (p->t == MPI_DOUBLE_INT) {
        OK(MPI_Isend(bytes, 8, MPI_BYTE, to, 9, MPI_COMM_WORLD, &s));
        OK(MPI_Recv(in, 1, MPI_DOUBLE_INT, from, 9, MPI_COMM_WORLD, &st));
        OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
        OK(MPI_Get_count(&st, MPI_DOUBLE_INT, &n)); EQ(n, MPI_UNDEFINED);
        OK(MPI_Get_elements(&st, MPI_DOUBLE_INT, &n)); EQ(n, 1);
    }

    /* Sendrecv_replace keeps the padding too. */
    unsigned char *rep = fresh(p, N);
    for (int k = 0; k < N; k++) put(p, rep, k, rank * 10 + k, -k);
    OK(MPI_Sendrecv_replace(rep, N, p->t, to, 7, from, 7, MPI_COMM_WORLD, &st));
    got(p, rep, N, from, "Sendrecv_replace"); counts(p, &st, N * packed(p));
    free(rep); free(out); free(in);
}

/* Rank r's pair k: many ties between ranks, and indexes that fall as the
 * rank rises (a tie goes to the lower index, not the lower rank). */
static double v_of(int r, int k) { return (double)((r * 7 + k * 3) % 4) - 1; }
static int i_of(int r, int k) { return 1000 - 10 * r + k; }

/* MAXLOC (max) or MINLOC over ranks [lo, hi) of pair k. */
static void want(int max, int lo, int hi, int k, double *v, int *i) {
    *v = v_of(lo, k); *i = i_of(lo, k);
    for (int r = lo + 1; r < hi; r++) {
        double x = v_of(r, k);
        int better = max ? x > *v : x < *v;
        if (better || (x == *v && i_of(r, k) < *i)) { *v = x; *i = i_of(r, k); }
    }
}

/* n result pairs in `b` are pairs first..first+n of the op over ranks
 * [lo, hi), with padding intact. */
static void result(const pair_t *p, const unsigned char *b, int n, int first, int max, int lo, int hi,
                   const char *what) {
    for (int k = 0; k < n; k++) {
        double v;
        int i;
        want(max, lo, hi, first + k, &v, &i);
        if (val(p, b, k) != v || idx(p, b, k) != i)
            FAIL("%s %s %s: pair %d is (%g, %d), expected (%g, %d)", p->name, max ? "MAXLOC" : "MINLOC", what,
                 first + k, val(p, b, k), idx(p, b, k), v, i);
    }
    pads_intact(p, b, n, what);
}

static void mine(const pair_t *p, unsigned char *b, int n) {
    for (int k = 0; k < n; k++) put(p, b, k, v_of(rank, k), i_of(rank, k));
}

static void reductions(const pair_t *p, int max) {
    MPI_Op op = max ? MPI_MAXLOC : MPI_MINLOC;
    int m = N * size;
    unsigned char *in = fresh(p, m), *out = fresh(p, m);
    MPI_Request r;
    mine(p, in, m);

    OK(MPI_Allreduce(in, out, N, p->t, op, MPI_COMM_WORLD));
    result(p, out, N, 0, max, 0, size, "Allreduce");
    for (int root = 0; root < size; root++) {
        memset(out, SENT, m * p->ext);
        OK(MPI_Reduce(in, out, N, p->t, op, root, MPI_COMM_WORLD));
        if (rank == root) result(p, out, N, 0, max, 0, size, "Reduce");
        else pads_intact(p, out, N, "Reduce off the root");
    }
    /* In place. */
    memset(out, SENT, m * p->ext); mine(p, out, N);
    OK(MPI_Allreduce(MPI_IN_PLACE, out, N, p->t, op, MPI_COMM_WORLD));
    result(p, out, N, 0, max, 0, size, "Allreduce in place");
    memset(out, SENT, m * p->ext); mine(p, out, N);
    if (rank == 0) OK(MPI_Reduce(MPI_IN_PLACE, out, N, p->t, op, 0, MPI_COMM_WORLD));
    else OK(MPI_Reduce(out, NULL, N, p->t, op, 0, MPI_COMM_WORLD));
    if (rank == 0) result(p, out, N, 0, max, 0, size, "Reduce in place");
    /* Scatters: rank r gets pairs 2r and 2r + 1 (block), or r % 2 + 1
     * pairs from the sum of the counts before (v). */
    memset(out, SENT, m * p->ext);
    OK(MPI_Reduce_scatter_block(in, out, 2, p->t, op, MPI_COMM_WORLD));
    result(p, out, 2, 2 * rank, max, 0, size, "Reduce_scatter_block");
    int rc[64], first = 0;
    TRUE(size <= 64);
    for (int j = 0; j < size; j++) { rc[j] = j % 2 + 1; if (j < rank) first += rc[j]; }
    memset(out, SENT, m * p->ext);
    OK(MPI_Reduce_scatter(in, out, rc, p->t, op, MPI_COMM_WORLD));
    result(p, out, rc[rank], first, max, 0, size, "Reduce_scatter");
    memset(out, SENT, m * p->ext); mine(p, out, m);
    OK(MPI_Reduce_scatter_block(MPI_IN_PLACE, out, 2, p->t, op, MPI_COMM_WORLD));
    result(p, out, 2, 2 * rank, max, 0, size, "Reduce_scatter_block in place");
    /* Prefixes. */
    memset(out, SENT, m * p->ext);
    OK(MPI_Scan(in, out, N, p->t, op, MPI_COMM_WORLD));
    result(p, out, N, 0, max, 0, rank + 1, "Scan");
    memset(out, SENT, m * p->ext);
    OK(MPI_Exscan(in, out, N, p->t, op, MPI_COMM_WORLD));
    if (rank > 0) result(p, out, N, 0, max, 0, rank, "Exscan");
    else pads_intact(p, out, N, "Exscan on rank 0");
    memset(out, SENT, m * p->ext); mine(p, out, N);
    OK(MPI_Scan(MPI_IN_PLACE, out, N, p->t, op, MPI_COMM_WORLD));
    result(p, out, N, 0, max, 0, rank + 1, "Scan in place");

    /* Nonblocking. */
    memset(out, SENT, m * p->ext);
    OK(MPI_Iallreduce(in, out, N, p->t, op, MPI_COMM_WORLD, &r)); OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    result(p, out, N, 0, max, 0, size, "Iallreduce");
    memset(out, SENT, m * p->ext);
    OK(MPI_Ireduce(in, out, N, p->t, op, size - 1, MPI_COMM_WORLD, &r)); OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    if (rank == size - 1) result(p, out, N, 0, max, 0, size, "Ireduce");
    memset(out, SENT, m * p->ext);
    OK(MPI_Ireduce_scatter_block(in, out, 2, p->t, op, MPI_COMM_WORLD, &r)); OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    result(p, out, 2, 2 * rank, max, 0, size, "Ireduce_scatter_block");
    memset(out, SENT, m * p->ext);
    OK(MPI_Ireduce_scatter(in, out, rc, p->t, op, MPI_COMM_WORLD, &r)); OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    result(p, out, rc[rank], first, max, 0, size, "Ireduce_scatter");
    memset(out, SENT, m * p->ext);
    OK(MPI_Iscan(in, out, N, p->t, op, MPI_COMM_WORLD, &r)); OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    result(p, out, N, 0, max, 0, rank + 1, "Iscan");
    memset(out, SENT, m * p->ext);
    OK(MPI_Iexscan(in, out, N, p->t, op, MPI_COMM_WORLD, &r)); OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    if (rank > 0) result(p, out, N, 0, max, 0, rank, "Iexscan");
    memset(out, SENT, m * p->ext); mine(p, out, N);
    OK(MPI_Iallreduce(MPI_IN_PLACE, out, N, p->t, op, MPI_COMM_WORLD, &r)); OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    result(p, out, N, 0, max, 0, size, "Iallreduce in place");

    /* Persistent, started twice. */
    MPI_Request pr[3];
    unsigned char *o2 = fresh(p, N), *o3 = fresh(p, 2);
    OK(MPI_Allreduce_init(in, out, N, p->t, op, MPI_COMM_WORLD, MPI_INFO_NULL, &pr[0]));
    OK(MPI_Scan_init(in, o2, N, p->t, op, MPI_COMM_WORLD, MPI_INFO_NULL, &pr[1]));
    OK(MPI_Reduce_scatter_block_init(in, o3, 2, p->t, op, MPI_COMM_WORLD, MPI_INFO_NULL, &pr[2]));
    for (int round = 0; round < 2; round++) {
        memset(out, SENT, m * p->ext); memset(o2, SENT, N * p->ext); memset(o3, SENT, 2 * p->ext);
        OK(MPI_Startall(3, pr)); OK(MPI_Waitall(3, pr, MPI_STATUSES_IGNORE));
        result(p, out, N, 0, max, 0, size, "Allreduce_init");
        result(p, o2, N, 0, max, 0, rank + 1, "Scan_init");
        result(p, o3, 2, 2 * rank, max, 0, size, "Reduce_scatter_block_init");
    }
    for (int j = 0; j < 3; j++) OK(MPI_Request_free(&pr[j]));

    /* Reduce_local: rank 0's pairs into this rank's. */
    unsigned char *a = fresh(p, N), *b = fresh(p, N);
    for (int k = 0; k < N; k++) { put(p, a, k, v_of(0, k), i_of(0, k)); put(p, b, k, v_of(rank, k), i_of(rank, k)); }
    OK(MPI_Reduce_local(a, b, N, p->t, op));
    for (int k = 0; k < N; k++) {
        double v;
        int i;
        want(max, 0, 1, k, &v, &i);
        double x = v_of(rank, k);
        int better = max ? x > v : x < v;
        if (better || (x == v && i_of(rank, k) < i)) { v = x; i = i_of(rank, k); }
        TRUE(val(p, b, k) == v); EQ(idx(p, b, k), i);
    }
    pads_intact(p, b, N, "Reduce_local");
    free(a); free(b); free(o2); free(o3); free(in); free(out);
}

/* A predefined op on a type derived from a pair type: 2 contiguous
 * DOUBLE_INTs, count 2 (4 pairs). */
static void derived_reduction(void) {
    const pair_t *p = &pairs[0];
    MPI_Datatype c;
    OK(MPI_Type_contiguous(2, MPI_DOUBLE_INT, &c)); OK(MPI_Type_commit(&c));
    unsigned char *in = fresh(p, 4), *out = fresh(p, 4);
    mine(p, in, 4);
    OK(MPI_Allreduce(in, out, 2, c, MPI_MAXLOC, MPI_COMM_WORLD));
    result(p, out, 4, 0, 1, 0, size, "Allreduce of a contiguous type");
    MPI_Type_free(&c); free(in); free(out);
}

/* Many pairs: the engine splits a large reduction into pieces (by
 * segment, by rank), which must fall on whole packed values (12 or 6
 * bytes, not a power of two). */
static void large(const pair_t *p) {
    const int m = 40000 + 7;
    unsigned char *in = fresh(p, m), *out = fresh(p, m);
    mine(p, in, m);
    MPI_Request r;
    OK(MPI_Allreduce(in, out, m, p->t, MPI_MAXLOC, MPI_COMM_WORLD));
    result(p, out, m, 0, 1, 0, size, "large Allreduce");
    memset(out, SENT, (size_t)m * p->ext);
    OK(MPI_Iallreduce(in, out, m, p->t, MPI_MINLOC, MPI_COMM_WORLD, &r)); OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    result(p, out, m, 0, 0, 0, size, "large Iallreduce");
    memset(out, SENT, (size_t)m * p->ext);
    OK(MPI_Reduce(in, out, m, p->t, MPI_MINLOC, 0, MPI_COMM_WORLD));
    if (rank == 0) result(p, out, m, 0, 0, 0, size, "large Reduce");
    free(in); free(out);
}

/* A user op on DOUBLE_INT sees the C struct (its own layout). */
static void user_max(void *in, void *inout, int *len, MPI_Datatype *t) {
    TRUE(*t == MPI_DOUBLE_INT);
    struct di *a = in, *b = inout;
    for (int k = 0; k < *len; k++) if (a[k].v > b[k].v || (a[k].v == b[k].v && a[k].i < b[k].i)) b[k] = a[k];
}

static void user_op(void) {
    MPI_Op op;
    OK(MPI_Op_create(user_max, 1, &op));
    struct di in[N], out[N];
    for (int k = 0; k < N; k++) { in[k].v = v_of(rank, k); in[k].i = i_of(rank, k); }
    OK(MPI_Allreduce(in, out, N, MPI_DOUBLE_INT, op, MPI_COMM_WORLD));
    for (int k = 0; k < N; k++) {
        double v;
        int i;
        want(1, 0, size, k, &v, &i);
        TRUE(out[k].v == v); EQ(out[k].i, i);
    }
    OK(MPI_Op_free(&op));
}

int main(int argc, char **argv) {
    check_init(&argc, &argv);
    rank = check_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    pair_t all[4] = {PAIR(MPI_DOUBLE_INT, di, d), PAIR(MPI_LONG_INT, li, l), PAIR(MPI_SHORT_INT, si, s),
                     PAIR(MPI_LONG_DOUBLE_INT, ldi, ld)};
    memcpy(pairs, all, sizeof all);

    /* The standard's sizes, the struct's extents; the int's end is the
     * true extent. */
    queries(&pairs[0], 12, 16, 12);
    queries(&pairs[1], 12, 16, 12);
    queries(&pairs[2], 6, 8, 8);
    queries(&pairs[3], (int)sizeof(long double) + 4, (int)sizeof(struct ldi), (int)sizeof(long double) + 4);
    /* The pair types without padding are unchanged. */
    int s;
    MPI_Aint lb, ext;
    OK(MPI_Type_size(MPI_FLOAT_INT, &s)); EQ(s, 8);
    OK(MPI_Type_get_extent(MPI_FLOAT_INT, &lb, &ext)); EQ(ext, 8);
    OK(MPI_Type_size(MPI_2INT, &s)); EQ(s, 8);
    OK(MPI_Type_size(MPI_2DOUBLE_PRECISION, &s)); EQ(s, 16);

    derived();
    for (int t = 0; t < 4; t++) {
        packing(&pairs[t]);
        p2p(&pairs[t]);
        reductions(&pairs[t], 1);
        reductions(&pairs[t], 0);
    }
    derived_reduction();
    large(&pairs[0]);
    large(&pairs[2]);
    user_op();
    check_done("pairtypes");
    return 0;
}
