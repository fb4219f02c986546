/* The floor under any shared-memory barrier on this machine: two threads
 * pinned to two cores, each publishing a counter in its own cache line and
 * spinning on the other's. One barrier costs one cache-line transfer each
 * way (in parallel) and nothing else: no library, no clock read per
 * iteration, no wake-up protocol. The collectives' report quotes it next to
 * the barrier target (docs/perf/collectives.md).
 *
 * Usage: floor_barrier [CPU_A CPU_B [ITERATIONS]]   (default 0 1 2000000)
 * Prints an OSU-style table of one row, the median of 5 runs in µs:
 *   # size avg_us
 *   0 0.0632
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct line {
    _Alignas(64) atomic_long count;
    char pad[64 - sizeof(atomic_long)];
};

static struct line flag[2];
static long iterations = 2000000;
static int cpus[2] = {0, 1};

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
        fprintf(stderr, "floor_barrier: cannot pin to cpu %d\n", cpu);
        exit(1);
    }
}

static void *side(void *arg) {
    int me = (int)(long)arg;
    pin(cpus[me]);
    for (long i = 1; i <= iterations; i++) {
        atomic_store_explicit(&flag[me].count, i, memory_order_release);
        while (atomic_load_explicit(&flag[1 - me].count, memory_order_acquire) < i)
            ;
    }
    return NULL;
}

static double once(void) {
    atomic_store(&flag[0].count, 0);
    atomic_store(&flag[1].count, 0);
    struct timespec a, b;
    pthread_t other;
    clock_gettime(CLOCK_MONOTONIC, &a);
    if (pthread_create(&other, NULL, side, (void *)1L) != 0) {
        fprintf(stderr, "floor_barrier: pthread_create failed\n");
        exit(1);
    }
    side((void *)0L);
    pthread_join(other, NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    return ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / iterations;
}

static int cmp(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv) {
    if (argc >= 3) {
        cpus[0] = atoi(argv[1]);
        cpus[1] = atoi(argv[2]);
    }
    if (argc >= 4)
        iterations = atol(argv[3]);
    if (iterations <= 0) {
        fprintf(stderr, "floor_barrier: ITERATIONS must be positive\n");
        return 1;
    }
    double runs[5];
    for (int r = 0; r < 5; r++)
        runs[r] = once();
    qsort(runs, 5, sizeof runs[0], cmp);
    printf("# floor_barrier: two threads on cpus %d and %d, %ld iterations, median of 5 runs\n",
           cpus[0], cpus[1], iterations);
    printf("# size avg_us\n0 %.4f\n", runs[2] / 1000.0);
    return 0;
}
