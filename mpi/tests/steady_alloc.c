/* The C layer's hot paths allocate nothing once warm: MPI_Isend/MPI_Irecv
 * windows completed by MPI_Waitall, MPI_Wait and MPI_Test (on the world:
 * direct request handles; on a duplicate: table entries), and blocking
 * MPI_Send/MPI_Recv (the world's fast path and the general path), between
 * pairs of ranks; and MPI_Barrier, MPI_Allreduce and MPI_Bcast on the
 * node path (shm). This program's own malloc, calloc and realloc count
 * every allocation of the process (the library's Rust code allocates
 * through them) and hand over to glibc's.
 *
 * The same holds on the ofi device (libfabric's tcp;ofi_rxm included),
 * where the collectives are left out: they have no node path there, and a
 * collective that builds a schedule allocates (mpi/README). */
#include <stddef.h>
#include <string.h>
#include "check.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static unsigned long allocations;

void *malloc(size_t n) { __atomic_fetch_add(&allocations, 1, __ATOMIC_RELAXED); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { __atomic_fetch_add(&allocations, 1, __ATOMIC_RELAXED); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { __atomic_fetch_add(&allocations, 1, __ATOMIC_RELAXED); return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }

#define W 16

/* Whether the blocking collectives are in the rounds (see the top). */
static int with_collectives;

static void round_trip(MPI_Comm c, int to, int from, int i) {
    int out[W], in[W], flag = 0;
    MPI_Request r[2 * W];
    MPI_Status st[2 * W];
    for (int k = 0; k < W; k++) {
        out[k] = i * W + k;
        OK(MPI_Irecv(&in[k], 1, MPI_INT, from, k, c, &r[k]));
    }
    for (int k = 0; k < W; k++) OK(MPI_Isend(&out[k], 1, MPI_INT, to, k, c, &r[W + k]));
    OK(MPI_Waitall(2 * W, r, st));
    for (int k = 0; k < W; k++) EQ(in[k], i * W + k);
    /* One by one: MPI_Wait, and MPI_Test until done. */
    OK(MPI_Irecv(&in[0], 1, MPI_INT, from, W, c, &r[0]));
    OK(MPI_Isend(&out[1], 1, MPI_INT, to, W, c, &r[1]));
    OK(MPI_Wait(&r[1], &st[1]));
    do OK(MPI_Test(&r[0], &flag, &st[0])); while (!flag);
    EQ(in[0], i * W + 1);
    /* Blocking: even ranks send first (a rank alone sends to itself,
     * which is eager). */
    int me, n;
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &n);
    if (me % 2 == 0 || to == me) {
        OK(MPI_Send(&out[2], 1, MPI_INT, to, W + 1, c));
        OK(MPI_Recv(&in[2], 1, MPI_INT, from, W + 1, c, &st[0]));
    } else {
        OK(MPI_Recv(&in[2], 1, MPI_INT, from, W + 1, c, &st[0]));
        OK(MPI_Send(&out[2], 1, MPI_INT, to, W + 1, c));
    }
    EQ(in[2], i * W + 2);
    /* Blocking collectives on the node path. A communicator of one rank
     * has none: it builds a schedule per call, which allocates (mpi/README
     * lists it), so it is left out here. */
    if (n == 1 || !with_collectives) return;
    OK(MPI_Barrier(c));
    int sum = 0, one = 1;
    OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c));
    EQ(sum, n);
    int root_value = i;
    OK(MPI_Bcast(&root_value, 1, MPI_INT, 0, c));
    EQ(root_value, i);
}

int main(int argc, char **argv) {
    check_init(&argc, &argv);
    int me = check_rank, n;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    /* Pairs (0,1), (2,3), ...; an odd last rank talks to itself. Each
     * round needs the partner's messages of that round, so no rank runs
     * ahead and the backlog is one round's at most, which the warm-up
     * reaches: the engine's queues and pools keep what they grew to, and
     * grow again only for a deeper backlog. */
    int partner = me ^ 1;
    if (partner >= n) partner = me;
    int to = partner, from = partner;
    MPI_Comm dup;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    const char *device = getenv("FERRY_DEVICE");
    with_collectives = !(device && strcmp(device, "ofi") == 0);
    /* Above 4 ranks the 2-core CI machine is oversubscribed and each
     * round's collectives wait for every rank to be scheduled (about 6 ms
     * a round at 8 ranks): fewer rounds keep the job well inside its
     * timeout, and still far past the warm-up's backlog. */
    int warm = n > 4 ? 300 : 500, rounds = n > 4 ? 1500 : 5000;
    for (int pass = 0; pass < 2; pass++) {
        MPI_Comm c = pass == 0 ? MPI_COMM_WORLD : dup;
        for (int i = 0; i < warm; i++) round_trip(c, to, from, i);
        OK(MPI_Barrier(MPI_COMM_WORLD));
        unsigned long before = __atomic_load_n(&allocations, __ATOMIC_RELAXED);
        for (int i = 0; i < rounds; i++) round_trip(c, to, from, i);
        unsigned long made = __atomic_load_n(&allocations, __ATOMIC_RELAXED) - before;
        if (made != 0)
            FAIL("%lu allocations in %d warm rounds on %s", made, rounds, pass == 0 ? "the world" : "a duplicate");
        OK(MPI_Barrier(MPI_COMM_WORLD));
    }
    OK(MPI_Comm_free(&dup));
    check_done("steady_alloc");
    return 0;
}
