/* check.h: what every ferry-mpi C test uses. A failed check prints the
 * file, line, rank and both values, then aborts the job (non-zero exit). */
#ifndef FERRY_MPI_CHECK_H
#define FERRY_MPI_CHECK_H
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int check_rank = -1;

#define FAIL(...) do { \
    fprintf(stderr, "FAIL %s:%d rank %d: ", __FILE__, __LINE__, check_rank); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); \
    MPI_Abort(MPI_COMM_WORLD, 1); exit(1); } while (0)

/* A call that must succeed. */
#define OK(call) do { int rc_ = (call); if (rc_ != MPI_SUCCESS) { \
    char s_[MPI_MAX_ERROR_STRING]; int l_ = 0; MPI_Error_string(rc_, s_, &l_); \
    FAIL("%s returned %d (%s)", #call, rc_, s_); } } while (0)

/* A call that must fail with error class `cls` (under MPI_ERRORS_RETURN). */
#define ERR(cls, call) do { int rc_ = (call); int c_ = -1; MPI_Error_class(rc_, &c_); \
    if (c_ != (cls)) FAIL("%s returned class %d, expected %s (%d)", #call, c_, #cls, (int)(cls)); } while (0)

#define EQ(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
    if (a_ != b_) FAIL("%s == %lld, expected %s == %lld", #a, a_, #b, b_); } while (0)

#define TRUE(x) do { if (!(x)) FAIL("expected %s", #x); } while (0)

static inline void check_init(int *argc, char ***argv) {
    OK(MPI_Init(argc, argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &check_rank);
}

static inline void check_done(const char *name) {
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (check_rank == 0) printf("PASS %s\n", name);
    OK(MPI_Finalize());
}
#endif
