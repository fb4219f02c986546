#!/usr/bin/env bash
# The C layer's own cost, in instructions (callgrind): blocking 8-byte
# sends and receives to self, through ferry's slice API (`ferry-instr
# self`) and through MPI_Send/MPI_Recv of libmpi_abi.so.1 (c_self.c, built
# with the prefix's mpicc). Prints instructions per call of each and the
# ratio. Usage: benches/instr/c-overhead.sh [OUT_DIR] [PAIRS]
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
cargo build --release -q -p ferry-bench -p ferry-launch --bin ferry-instr --bin ferryrun
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
echo "| call | ferry slice API | C ABI (MPI_*) | C / ferry |"
echo "|---|---|---|---|"
awk -v a="$rs" -v b="$cs" 'BEGIN { printf "| send | %d | %d | %.2f |\n", a, b, b / a }'
awk -v a="$rr" -v b="$cr" 'BEGIN { printf "| recv | %d | %d | %.2f |\n", a, b, b / a }'
awk -v a="$((rs + rr))" -v b="$((cs + cr))" 'BEGIN { printf "| send + recv | %d | %d | %.2f |\n", a, b, b / a }'
