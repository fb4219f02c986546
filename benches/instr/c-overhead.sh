#!/usr/bin/env bash
# The C layer's own cost, in instructions (callgrind): blocking 8-byte
# sends and receives to self, through ferry's slice API (`ferry-instr
# self`) and through MPI_Send/MPI_Recv of libmpi_abi.so.1 (c_self.c, built
# with the prefix's mpicc). Prints instructions per call of each and the
# ratio; then the same for a windowed stream of 8 B messages on 2 ranks
# (ferry-bench bw against mpi_bw). Usage: benches/instr/c-overhead.sh [OUT_DIR] [PAIRS]
# Needs valgrind and a C compiler (installed here if missing).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/target/instr-c}
pairs=${2:-4000}
# shellcheck source=ci/lib/packages.sh
. "$root/ci/lib/packages.sh"
ci_packages_ensure valgrind gcc libc6-dev || { echo "c-overhead: could not install valgrind, gcc and libc6-dev (see above)" >&2; exit 1; }
cd "$root"
bin=${CARGO_TARGET_DIR:-$root/target}/release
rm -rf "$out" && mkdir -p "$out"
cargo build --release -q -p ferry-bench -p ferry-launch --bin ferry-instr --bin ferry-bench --bin ferryrun
ci/mpi-install.sh "$out/prefix" >"$out/install.log" 2>&1 \
    || { echo "c-overhead: ci/mpi-install.sh failed:" >&2; cat "$out/install.log" >&2; exit 1; }
"$out/prefix/bin/mpicc" -O2 -g benches/instr/c_self.c -o "$out/c_self"
count() { # NAME PROGRAM ARGS...: callgrind over the call_* functions, 1 rank on shm
    local name=$1; shift
    FERRY_DEVICE=shm "$bin/ferryrun" -n 1 valgrind --tool=callgrind \
        --callgrind-out-file="$out/$name.cg" --toggle-collect='*call_*' "$@" \
        >"$out/$name.log" 2>"$out/$name.err" \
        || { echo "c-overhead: the $name run failed:" >&2; cat "$out/$name.err" >&2; exit 1; }
}
count rust "$bin/ferry-instr" self "$pairs"
count c "$out/c_self" "$pairs"
# Inclusive cost of each call_* function, per call: callgrind collects
# every call, the warm-up's too, so the total is divided by all of them.
per_call() { # FILE FUNCTION
    # (awk reads to the end: an early exit would kill the pipe's writer.)
    callgrind_annotate --inclusive=yes "$1" 2>/dev/null \
        | awk -v f="$2" -v n="$((pairs + 200))" '
            !done && $0 ~ (":" f "( |$)") { gsub(",", "", $1); printf "%.0f\n", $1 / n; done = 1 }
            END { if (!done) print "?" }'
}
rs=$(per_call "$out/rust.cg" "call_send_slice")
rr=$(per_call "$out/rust.cg" "call_recv_slice")
cs=$(per_call "$out/c.cg" "call_send_c")
cr=$(per_call "$out/c.cg" "call_recv_c")
echo "Instructions per blocking 8 B call to self (callgrind; $pairs pairs + 200 warm-up)"
echo
row() { # LABEL RUST C: a table row with the ratio
    awk -v l="$1" -v a="$2" -v b="$3" 'BEGIN { printf "| %s | %d | %d | %.2f |\n", l, a, b, b / a }'
}
echo "| call | ferry slice API | C ABI (MPI_*) | C / ferry |"
echo "|---|---|---|---|"
row send "$rs" "$cs"
row recv "$rr" "$cr"
row "send + recv" "$((rs + rr))" "$((cs + cr))"

# A windowed stream (osu_bw's loop, 8 B, window 64: the message-rate
# figure), on 2 ranks: ferry-bench bw (Rust API: isend_buf / irecv_buf +
# wait_all_into) against mpi_bw (MPI_Isend / MPI_Irecv + MPI_Waitall).
# Two runs of different lengths per program; their difference per message
# cancels start-up and warm-up. ferry-bench runs an untimed pass over its
# first size before the timed one, so its messages count twice.
"$out/prefix/bin/mpicc" -O2 -g benches/compare/src/mpi_bw.c -o "$out/mpi_bw"
stream() { # NAME ITERS PROGRAM ARGS...: callgrind over both ranks, whole program
    local name=$1 n=$2; shift 2
    FERRY_DEVICE=shm "$bin/ferryrun" -n 2 sh -c 'out=$1 name=$2; shift 2
        exec valgrind --tool=callgrind --callgrind-out-file="$out/$name.$PMI_RANK" "$@" \
            >"$out/$name.$PMI_RANK.log" 2>"$out/$name.$PMI_RANK.err"' sh "$out" "$name.$n" "$@" \
        || { echo "c-overhead: the $name run failed:" >&2; cat "$out/$name.$n".*.err >&2; exit 1; }
}
total() { callgrind_annotate "$1" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }'; }
for n in 300 1300; do
    stream rust "$n" "$bin/ferry-bench" bw --sizes 8 --iters "$n" --warmup 10
    # mpi_bw's warm-up is a tenth of its iterations.
    stream c "$n" "$out/mpi_bw" 8 64 "$n"
done
per_msg() { # NAME RANK MESSAGES
    local a b
    a=$(total "$out/$1.300.$2"); b=$(total "$out/$1.1300.$2")
    awk -v a="$a" -v b="$b" -v m="$3" 'BEGIN { printf "%.0f", (b - a) / m }'
}
# ferry-bench: 2 passes x 1000 more windows of 64; mpi_bw: 1100 more.
rs0=$(per_msg rust 0 128000); rs1=$(per_msg rust 1 128000)
c0=$(per_msg c 0 70400); c1=$(per_msg c 1 70400)
echo
echo "Instructions per message of a windowed 8 B stream (window 64, 2 ranks; callgrind, whole program: the benchmark's own loop and the waits included)"
echo
echo "| rank | ferry-bench bw (Rust API) | mpi_bw (C ABI) | C / Rust |"
echo "|---|---|---|---|"
row sender "$rs0" "$c0"
row receiver "$rs1" "$c1"
