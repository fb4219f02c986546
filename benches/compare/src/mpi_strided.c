/* Non-contiguous ping-pong, 2 ranks: the cost of moving strided data.
 * Per size S (bytes of data), one-way latency (round trip / 2, average
 * over ITERS round trips after a warm-up) and the bandwidth it implies,
 * for four ways of moving the same S bytes:
 *   contig  S bytes of MPI_BYTE, contiguous (the floor);
 *   strided one element of MPI_Type_vector(S/8, 1, 2, MPI_DOUBLE): every
 *           other double of a 2S-byte span, sent and received as the type
 *           (the library packs, pipelines or streams it as it does);
 *   resized the same doubles as S/8 elements of a double resized to an
 *           extent of 16 bytes (a type of one block);
 *   packed  the same data through MPI_Pack into a buffer, a contiguous
 *           send, and MPI_Unpack on the other side: what a library that
 *           packs a message whole before sending does, done by hand.
 * Usage: mpi_strided [sizes] [iters]   sizes default "64k,1m,16m,64m" */
#include "mpi_common.h"

enum { CONTIG, STRIDED, RESIZED, PACKED };
static const char *const NAMES[] = {"contig", "strided", "resized", "packed"};

/* One round trip of `bytes` data bytes in `mode`, from rank 0's side
 * (`first`) or rank 1's. */
static void trip(int mode, int first, double *span, char *pk, long bytes, MPI_Datatype vec, MPI_Datatype one) {
    int peer = first ? 1 : 0, pos;
    for (int leg = 0; leg < 2; leg++) {
        int sending = (leg == 0) == first;
        switch (mode) {
        case CONTIG:
            if (sending) MPI_Send(span, (int)bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            else MPI_Recv(span, (int)bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            break;
        case STRIDED:
            if (sending) MPI_Send(span, 1, vec, peer, 1, MPI_COMM_WORLD);
            else MPI_Recv(span, 1, vec, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            break;
        case RESIZED:
            if (sending) MPI_Send(span, (int)(bytes / 8), one, peer, 1, MPI_COMM_WORLD);
            else MPI_Recv(span, (int)(bytes / 8), one, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            break;
        default:
            pos = 0;
            if (sending) {
                MPI_Pack(span, 1, vec, pk, (int)bytes, &pos, MPI_COMM_WORLD);
                MPI_Send(pk, (int)bytes, MPI_PACKED, peer, 1, MPI_COMM_WORLD);
            } else {
                MPI_Recv(pk, (int)bytes, MPI_PACKED, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Unpack(pk, (int)bytes, &pos, span, 1, vec, MPI_COMM_WORLD);
            }
        }
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    need_two(rank);
    long sizes[32];
    int nsz = parse_sizes(argc > 1 ? argv[1] : "64k,1m,16m,64m", sizes, 32);
    int iters_arg = argc > 2 ? atoi(argv[2]) : 0;
    long maxsz = 8;
    for (int i = 0; i < nsz; i++) if (sizes[i] > maxsz) maxsz = sizes[i];
    report_binding(rank);
    double *span = alloc_buf(2 * (size_t)maxsz, 1);
    char *pk = alloc_buf((size_t)maxsz, 2);
    if (!rank) printf("# mpi_strided: one-way latency (us) and bandwidth (GB/s) of S data bytes\n"
                      "# %-10s %-8s %12s %10s\n", "size", "mode", "lat_us", "GB/s");
    MPI_Datatype one;
    MPI_Type_create_resized(MPI_DOUBLE, 0, 16, &one);
    MPI_Type_commit(&one);
    for (int s = 0; s < nsz; s++) {
        long bytes = sizes[s] / 8 * 8;
        MPI_Datatype vec;
        MPI_Type_vector((int)(bytes / 8), 1, 2, MPI_DOUBLE, &vec);
        MPI_Type_commit(&vec);
        int iters = iters_arg ? iters_arg : (int)(bytes >= (16 << 20) ? 10 : bytes >= (1 << 20) ? 100 : 1000);
        for (int mode = CONTIG; mode <= PACKED; mode++) {
            for (int i = 0; i < 2; i++) trip(mode, rank == 0, span, pk, bytes, vec, one);
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < iters; i++) trip(mode, rank == 0, span, pk, bytes, vec, one);
            double lat = (MPI_Wtime() - t0) / (2.0 * iters);
            if (!rank) printf("  %-10ld %-8s %12.2f %10.2f\n", bytes, NAMES[mode], lat * 1e6, bytes / lat / 1e9);
            fflush(stdout);
        }
        MPI_Type_free(&vec);
    }
    MPI_Type_free(&one);
    free(span); free(pk);
    MPI_Finalize();
    return 0;
}
