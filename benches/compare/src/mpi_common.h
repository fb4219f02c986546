/* Shared helpers for ferry's OSU-style MPI peer programs (benches/compare).
 * Output format matches ferry-bench: '#' header lines, then rows
 * `size value [more columns]`; the last header line names the columns. */
#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((unused)) static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
/* p-th percentile; sorts v */
__attribute__((unused)) static double pct(double *v, int n, double p) {
    qsort(v, n, sizeof(double), cmp_dbl);
    return v[(int)(p / 100.0 * (n - 1) + 0.5)];
}
/* parse "8,64k,1m" style size lists (k/m suffixes) */
static int parse_sizes(const char *s, long *out, int max) {
    int n = 0;
    while (s && *s && n < max) {
        char *end;
        long v = strtol(s, &end, 10);
        if (*end == 'k' || *end == 'K') { v <<= 10; end++; }
        else if (*end == 'm' || *end == 'M') { v <<= 20; end++; }
        out[n++] = v;
        s = *end == ',' ? end + 1 : NULL;
    }
    return n;
}
/* The sizes to run: argv[1] when given, else powers of two from 1 B to
 * 4 MiB (0 B first when `with_zero`), into sizes[64]. Returns how many;
 * *maxsz is the largest, at least `least` (the buffers' size). */
__attribute__((unused)) static int sizes_arg(int argc, char **argv, long *sizes, int with_zero,
                                             size_t least, size_t *maxsz) {
    int n = 0;
    if (argc > 1) n = parse_sizes(argv[1], sizes, 64);
    else {
        if (with_zero) sizes[n++] = 0;
        for (long s = 1; s <= (4 << 20); s <<= 1) sizes[n++] = s;
    }
    *maxsz = least;
    for (int i = 0; i < n; i++) if ((size_t)sizes[i] > *maxsz) *maxsz = sizes[i];
    return n;
}
/* print the CPU affinity of each rank as a header line (to verify pinning) */
static void report_binding(int rank) {
    cpu_set_t s; char buf[256]; int n = 0;
    sched_getaffinity(0, sizeof s, &s);
    for (int c = 0; c < CPU_SETSIZE && n < 200; c++)
        if (CPU_ISSET(c, &s)) n += snprintf(buf + n, sizeof buf - n, "%d,", c);
    if (n) buf[n - 1] = 0;
    char ver[MPI_MAX_LIBRARY_VERSION_STRING]; int len;
    MPI_Get_library_version(ver, &len);
    char *nl = strchr(ver, '\n'); if (nl) *nl = 0;
    fprintf(stderr, "# rank %d pid %d affinity {%s} on cpu %d | %.60s\n", rank, getpid(), buf, sched_getcpu(), ver);
}
static void *alloc_buf(size_t sz, int val) {
    void *p = NULL;
    if (posix_memalign(&p, 4096, sz ? sz : 1)) { fprintf(stderr, "alloc failed\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
    memset(p, val, sz ? sz : 1);
    return p;
}
__attribute__((unused)) static int need_two(int rank) {
    int np;
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np != 2) { if (!rank) fprintf(stderr, "needs exactly 2 ranks\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
    return np;
}
/* MPI_Init, then this rank, the size, and which of `names` argv[1] picks;
 * prints `usage` and aborts when it names none. */
__attribute__((unused)) static int init_pick(int *argc, char ***argv, const char *const *names,
                                             int nops, const char *usage, int *rank, int *np) {
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, np);
    for (int i = 0; *argc > 1 && i < nops; i++)
        if (!strcmp((*argv)[1], names[i])) return i;
    if (!*rank) fprintf(stderr, "usage: %s\n", usage);
    MPI_Abort(MPI_COMM_WORLD, 2);
    return nops;
}
