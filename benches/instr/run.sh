#!/usr/bin/env bash
# Counts the instructions one 8 B message costs each rank of a 2-rank
# shm ping-pong, by phase, with callgrind (see ferry-instr.rs and
# report.py). Usage: benches/instr/run.sh [OUT_DIR] [MESSAGES]
# (INSTR_TOP=N also lists the N most expensive functions; INSTR_RANKS=N
# runs N ranks, of which 0 and 1 are measured and the rest only wait)
# Needs valgrind (apt-get install valgrind; installed here if missing).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/target/instr}
messages=${2:-4000}
if ! command -v valgrind >/dev/null 2>&1; then
    echo "instr: valgrind is missing; installing it" >&2
    if [ "$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi
    $sudo apt-get install -y --no-install-recommends valgrind >&2 \
        || { echo "instr: could not install valgrind" >&2; exit 1; }
fi
cd "$root"
bin=${CARGO_TARGET_DIR:-$root/target}/release
cargo build --release -q -p ferry-bench -p ferry-launch --bin ferry-instr --bin ferryrun
rm -rf "$out" && mkdir -p "$out"
# Each run collects only some call_* functions; the first dump (before the
# idle phase) is the warm-up and is not read; the receive runs dump the
# idle phase apart (before the ping-pong).
run() {
    local name=$1; shift
    INSTR_BIN="$bin/ferry-instr" FERRY_DEVICE=shm "$bin/ferryrun" -n "${INSTR_RANKS:-2}" sh -c '
        name=$1 out=$2; shift 2
        # Bystanders (rank 2 and up) run natively: only 0 and 1 are counted.
        [ "$PMI_RANK" -ge 2 ] && exec "$INSTR_BIN"
        exec valgrind --tool=callgrind --callgrind-out-file="$out/$name.$PMI_RANK" \
            --dump-before="*phase_idle*" "$@" >"$out/$name.$PMI_RANK.log" 2>"$out/$name.$PMI_RANK.err"' \
        sh "$name" "$out" "$@" \
        || { echo "instr: the $name run failed:" >&2; cat "$out/$name".*.err >&2; exit 1; }
}
run send --toggle-collect='*call_isend*' "$bin/ferry-instr" "$messages"
run recv --toggle-collect='*call_irecv*' --toggle-collect='*call_test_*' \
    --dump-before='*phase_pingpong*' "$bin/ferry-instr" "$messages"
# The blocking slice API (MPI_Send/MPI_Recv): the idle phase is
# phase_idle_blocking, the ping-pong phase_pingpong_blocking.
run bsend --toggle-collect='*call_send_slice*' "$bin/ferry-instr" blocking "$messages"
run brecv --toggle-collect='*call_recv_slice*' --dump-before='*phase_idle_blocking*' \
    --dump-before='*phase_pingpong_blocking*' "$bin/ferry-instr" blocking "$messages"
python3 benches/instr/report.py "$out" "${INSTR_TOP:-0}"
