#!/usr/bin/env bash
# benches/compare/c-abi-pairs.sh — the MPI C layer's overhead in time (issue
# 13's 5 % rule): ferry-bench against the same benchmark in C
# (src/mpi_latency.c, src/mpi_bw.c built with the prefix's mpicc), run
# alternately, one launch of each per round, 2 ranks pinned to cores 0 and
# 1. Prints, per size, the medians over rounds of each side and of the
# per-round ratio C / ferry-bench. The per-round ratio is the figure: on
# this kind of VM a launch falls in a fast or a slow mode, and both
# launches of a round usually share it, where the medians of separate
# launches (ci/compare.sh's tables) do not resolve 5 %.
#
# Usage: benches/compare/c-abi-pairs.sh PREFIX [ROUNDS] [LAT_SIZES] [RATE]
#   PREFIX     a prefix from ci/mpi-install.sh
#   ROUNDS     alternating rounds (default 15)
#   LAT_SIZES  latency sizes (default 0,8,64,1024,65536)
#   RATE       1 (default) also compares the 8 B message rate (window 64)
# Uses target/release/ferry-bench and ferryrun (built here if missing) and
# python3 for the medians.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
[ $# -ge 1 ] || { echo "usage: $0 PREFIX [ROUNDS] [LAT_SIZES] [RATE]" >&2; exit 2; }
prefix=$1 rounds=${2:-15} sizes=${3:-0,8,64,1024,65536} rate=${4:-1}
[ -x "$prefix/bin/mpicc" ] || { echo "c-abi-pairs: $prefix/bin/mpicc is missing (ci/mpi-install.sh PREFIX)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "c-abi-pairs: python3 is needed for the medians" >&2; exit 1; }
bin=${CARGO_TARGET_DIR:-$root/target}/release
cargo build --release -q -p ferry-bench -p ferry-launch --bin ferry-bench --bin ferryrun
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$prefix/bin/mpicc" -O2 benches/compare/src/mpi_latency.c -o "$out/mpi_latency"
"$prefix/bin/mpicc" -O2 benches/compare/src/mpi_bw.c -o "$out/mpi_bw"
pin='exec taskset -c $PMI_RANK "$@"'
rust() { FERRY_DEVICE=shm "$bin/ferryrun" -n 2 sh -c "$pin" _ "$bin/ferry-bench" "$@"; }
c() { FERRY_DEVICE=shm "$prefix/bin/mpiexec" -n 2 sh -c "$pin" _ "$@"; }
# rows: "R|C ROUND lat SIZE AVG P50" and "R|C ROUND rate 8 MSGS"
rows() { grep -E '^ *[0-9]+ ' || true; }
for r in $(seq "$rounds"); do
  rust latency --sizes "$sizes" 2>/dev/null | rows | awk -v r="$r" '{print "R", r, "lat", $1, $2, $3}'
  c "$out/mpi_latency" "$sizes" 2>/dev/null | rows | awk -v r="$r" '{print "C", r, "lat", $1, $2, $3}'
  if [ "$rate" = 1 ]; then
    rust bw --sizes 8 --iters 20000 2>/dev/null | rows | awk -v r="$r" '{print "R", r, "rate", $1, $4}'
    c "$out/mpi_bw" 8 64 20000 2>/dev/null | rows | awk -v r="$r" '{print "C", r, "rate", $1, $4}'
  fi
done >"$out/rows"
python3 - "$out/rows" <<'PY'
import statistics as s, sys
d = {}
for line in open(sys.argv[1]):
    side, rnd, what, size, *vals = line.split()
    d[(side, int(rnd), what, int(size))] = [float(v) for v in vals]
def table(what, names):
    keys = sorted({(w, z) for (_, _, w, z) in d if w == what})
    for _, z in keys:
        rounds = [r for (side, r, w, zz) in d if side == "R" and w == what and zz == z and ("C", r, w, z) in d]
        cells = []
        for i, _ in enumerate(names):
            rv = [d[("R", r, what, z)][i] for r in rounds]
            cv = [d[("C", r, what, z)][i] for r in rounds]
            ratio = s.median(c / x for c, x in zip(cv, rv))
            cells.append("%.4g | %.4g | %.3f" % (s.median(rv), s.median(cv), ratio))
        print("| %d | %s | %d |" % (z, " | ".join(cells), len(rounds)))
print("latency, one-way µs (medians over rounds; C / ferry-bench: median of per-round ratios)\n")
print("| size | ferry-bench avg | C avg | C / ferry-bench | ferry-bench p50 | C p50 | C / ferry-bench | rounds |")
print("|---|---|---|---|---|---|---|---|")
table("lat", ["avg", "p50"])
if any(k[2] == "rate" for k in d):
    print("\nmessage rate, msg/s, window 64 (a ratio above 1: C faster)\n")
    print("| size | ferry-bench | C | C / ferry-bench | rounds |")
    print("|---|---|---|---|---|")
    table("rate", ["msgs"])
PY
