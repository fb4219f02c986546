#!/usr/bin/env bash
# Instructions per 8 B message of osu_bw's loop (window 64 + ack), ferry
# beside Open MPI (ob1+vader, pml ucx) and MPICH, each side counted apart:
# one rank runs under callgrind while the other runs natively, so the
# counted rank never waits for a slower peer (the native receiver frees the
# sender's slots at once; the native sender has the window there before the
# receiver looks). Each figure is the difference of two runs (ITERS and
# ITERS/10 timed iterations), so start-up and finalize cancel out; it
# includes the program's own loop, as osu_bw's would.
#
# Usage: benches/instr/peers.sh [ITERS]   (default 2000)
# Needs valgrind, Open MPI, MPICH and a C compiler (installed if missing),
# builds the C peers (benches/compare) and ferry's MPI prefix
# (ci/mpi-install.sh) as ci/compare.sh does.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
. ci/lib/packages.sh
ci_fail_trap benches/instr/peers.sh
ci_packages_ensure valgrind openmpi-bin libopenmpi-dev mpich libmpich-dev gcc make python3
iters=${1:-2000}
small=$((iters / 10))
target=${CARGO_TARGET_DIR:-$root/target}
out=$target/instr-peers
rm -rf "$out" && mkdir -p "$out"

cargo build --release -q -p ferry-bench -p ferry-launch --bin ferry-bench --bin ferryrun
make -s -C benches/compare build/mpi_bw.ompi build/mpi_bw.mpich
prefix=$target/compare-mpi-prefix
bash ci/mpi-install.sh "$prefix" >"$out/mpi-install.log" 2>&1 \
    || { echo "peers.sh: ci/mpi-install.sh failed:" >&2; tail -20 "$out/mpi-install.log" >&2; exit 1; }
rm -f benches/compare/build/mpi_bw.ferry
make -s -C benches/compare build/mpi_bw.ferry FERRY_MPICC="$prefix/bin/mpicc"

build=benches/compare/build
ompi=(mpirun.openmpi --allow-run-as-root --oversubscribe -np 2)
# Prints the instruction total of the counted rank (COUNT: 0 sender,
# 1 receiver) of one run. Arguments: name, iterations, launcher and program.
total() {
    local name=$1 n=$2; shift 2
    COUNT=$count OUT="$out/$name.$count.$n" "$@" sh -c '
        r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
        if [ "$r" = "$COUNT" ]; then
            exec valgrind --tool=callgrind --callgrind-out-file="$OUT" "$@" 2>"$OUT.err"
        fi
        exec "$@"' sh "${prog[@]}" >"$out/$name.$count.$n.log" 2>&1 \
        || { echo "peers.sh: the $name run failed:" >&2; cat "$out/$name.$count.$n.log" >&2; exit 1; }
    callgrind_annotate "$out/$name.$count.$n" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'
}

# name | launcher | program and arguments (%N: the iteration count) | messages per iteration
peers=(
    "Open MPI pml ucx|${ompi[*]} --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any|$build/mpi_bw.ompi 8 64 %N|64"
    "Open MPI ob1+vader|${ompi[*]} --mca pml ob1 --mca btl self,vader|$build/mpi_bw.ompi 8 64 %N|64"
    "MPICH|mpiexec.hydra -n 2|$build/mpi_bw.mpich 8 64 %N|64"
    "ferry, MPI C ABI|env FERRY_DEVICE=shm $target/release/ferryrun -n 2|$build/mpi_bw.ferry 8 64 %N|64"
    # ferry-bench runs its job-wide warm-up pass too: twice the messages.
    "ferry, Rust API (ferry-bench bw)|env FERRY_DEVICE=shm $target/release/ferryrun -n 2|$target/release/ferry-bench bw --sizes 8 --warmup 0 --iters %N|128"
)
echo "Instructions per 8 B message, osu_bw loop (window 64 + ack), callgrind, $iters - $small iterations"
echo
echo "| implementation | sender | receiver | both sides |"
echo "|---|---|---|---|"
for entry in "${peers[@]}"; do
    IFS='|' read -r name launcher program per <<<"$entry"
    read -r -a launch <<<"$launcher"
    row=()
    slug=$(printf '%s' "$name" | tr -c 'A-Za-z0-9' '_')
    for count in 0 1; do
        prog=(${program//%N/$iters}); big=$(total "$slug" "$iters" "${launch[@]}")
        prog=(${program//%N/$small}); little=$(total "$slug" "$small" "${launch[@]}")
        # osu-style loops time ITERS plus ITERS/10 warm-up iterations.
        row+=("$(python3 -c "
import sys
big, little, iters, small, per = map(int, sys.argv[1:])
warm = lambda n: n // 10 if per == 64 else 0
print(round((big - little) / ((iters + warm(iters) - small - warm(small)) * per)))" \
            "$big" "$little" "$iters" "$small" "$per")")
    done
    echo "| $name | ${row[0]} | ${row[1]} | $((row[0] + row[1])) |"
done
