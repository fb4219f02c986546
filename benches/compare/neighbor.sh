#!/usr/bin/env bash
# benches/compare/neighbor.sh — issue 40's figures: MPI_Neighbor_alltoall
# and MPI_Neighbor_allgather on a 2-D periodic Cartesian grid
# (src/mpi_neighbor.c), 4 and 8 ranks on this machine's CPUs
# (oversubscribed on 2 cores; no rank pinned, every launcher alike), ferry's
# MPI C ABI against Open MPI (ob1 + vader) and MPICH (Hydra), in
# alternating repetitions; medians over them, ratios peer/ferry (above 1:
# ferry is faster). Writes docs/perf/neighbor.md and its raw output under
# docs/perf/raw/neighbor/.
#
# Usage: benches/compare/neighbor.sh [--reps N] [--sizes 8,1k,64k] [--ranks "4 8"] [--iters N]
#   (--iters: timed calls per size, a tenth as many warm-up ones; default
#   the program's, 1000 up to 8 KiB and 100 above: MPICH's calls take
#   milliseconds oversubscribed, so a run of all three peers takes minutes)
# Needs mpicc.openmpi and mpicc.mpich (ci/compare.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
# shellcheck source=ci/lib/packages.sh
. ci/lib/packages.sh
REPS=5 SIZES=8,1k,64k RANKS="4 8" ITERS=""
while [ $# -gt 0 ]; do
  case $1 in
    --reps) REPS=$2; shift 2;;
    --sizes) SIZES=$2; shift 2;;
    --ranks) RANKS=$2; shift 2;;
    --iters) ITERS=$2; shift 2;;
    *) echo "neighbor.sh: unknown option $1" >&2; exit 2;;
  esac
done
ci_packages_ensure openmpi-bin libopenmpi-dev mpich libmpich-dev make gcc || {
  echo "neighbor.sh: could not install Open MPI and MPICH (see above)" >&2; exit 1; }
prefix=${CARGO_TARGET_DIR:-$ROOT/target}/compare-mpi-prefix
bash ci/mpi-install.sh "$prefix" >/dev/null
make -s -C benches/compare build/mpi_neighbor.ompi build/mpi_neighbor.mpich
make -s -C benches/compare build/mpi_neighbor.ferry FERRY_MPICC="$prefix/bin/mpicc"
bin=benches/compare/build/mpi_neighbor
raw=docs/perf/raw/neighbor
rm -rf "$raw"; mkdir -p "$raw"
launch() { # PEER N -> the command prefix
  case $1 in
    ferry) echo "$prefix/bin/mpiexec -n $2 --bind-to none";;
    ompi) echo "mpirun.openmpi --allow-run-as-root --oversubscribe -np $2 --bind-to none --mca pml ob1 --mca btl self,vader";;
    mpich) echo "mpiexec.hydra -n $2 -bind-to none";;
  esac
}
for rep in $(seq 1 "$REPS"); do
  for n in $RANKS; do
    for op in alltoall allgather; do
      for peer in ferry ompi mpich; do
        out="$raw/$peer-$op-$n-rep$rep.txt"
        # shellcheck disable=SC2046
        timeout 600 $(launch $peer "$n") "$bin.$peer" "$op" "$SIZES" ${ITERS:+"$ITERS" $((ITERS / 10))} >"$out" 2>/dev/null \
          || echo "# FAILED (exit $?)" >>"$out"
      done
    done
  done
  echo "[neighbor] repetition $rep of $REPS done" >&2
done
python3 - "$raw" "$REPS" "$RANKS" "${ITERS:-the program default}" >docs/perf/neighbor.md <<'PY'
import glob, os, statistics, sys
raw, reps, ranks, iters = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4]
def rows(path):
    out = {}
    for line in open(path):
        if line.startswith('#') or not line.strip():
            continue
        f = line.split()
        out[int(f[0])] = (float(f[1]), float(f[4]))
    return out
data = {}
for p in glob.glob(os.path.join(raw, '*.txt')):
    peer, op, n, _ = os.path.basename(p)[:-4].split('-')
    for size, v in rows(p).items():
        data.setdefault((op, n, size, peer), []).append(v)
print('# Neighborhood collectives on a 2-D periodic grid (issue 40)\n')
print(f'`benches/compare/neighbor.sh --reps {reps}` (timed calls per size: {iters}): `src/mpi_neighbor.c` built with each MPI\'s `mpicc`,')
print('4 and 8 ranks on 2 cores (oversubscribed, no rank pinned), the peers alternating run by run;')
print('Open MPI with ob1 + vader, MPICH under Hydra. Figures: medians over the repetitions of the')
print('average latency over the ranks (avg, µs) and rank 0\'s median call (p50, µs); ratio = peer / ferry')
print('(above 1: ferry is faster).\n')
for op in ('alltoall', 'allgather'):
    for n in ranks:
        print(f'## MPI_Neighbor_{op}, {n} ranks\n')
        print('| block | ferry avg | Open MPI avg | MPICH avg | ferry p50 | Open MPI p50 | MPICH p50 | Open MPI / ferry (avg) | MPICH / ferry (avg) |')
        print('|---|---|---|---|---|---|---|---|---|')
        sizes = sorted({k[2] for k in data if k[0] == op and k[1] == n})
        for s in sizes:
            med = {}
            for peer in ('ferry', 'ompi', 'mpich'):
                v = data.get((op, n, s, peer), [])
                med[peer] = (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) if v else None
            def f(peer, i):
                return f'{med[peer][i]:.2f}' if med[peer] else 'failed'
            def r(peer):
                return f'{med[peer][0] / med["ferry"][0]:.2f}' if med[peer] and med['ferry'] else '-'
            print(f'| {s} B | {f("ferry",0)} | {f("ompi",0)} | {f("mpich",0)} | {f("ferry",1)} | {f("ompi",1)} | {f("mpich",1)} | {r("ompi")} | {r("mpich")} |')
        print()
PY
echo "[neighbor] wrote docs/perf/neighbor.md" >&2
