#!/usr/bin/env bash
# benches/compare/rma.sh — issue 39's one-sided latencies: src/mpi_rma.c
# (OSU's put/get/acc/fop/cas latency loops: MPI_Win_lock_all, a flush after
# each operation, the target waiting in MPI_Barrier) built with ferry's
# mpicc, Open MPI's and MPICH's, 2 ranks pinned to cores 0 and 1, the
# peers alternating run by run; medians over the repetitions; ratio =
# ferry / best peer (below 1: ferry is faster). Writes docs/perf/rma.md and
# its raw output under docs/perf/raw/rma/.
#
# Usage: benches/compare/rma.sh [--reps N] [--sizes 8,64k,1m] [--iters N]
# Needs mpicc.openmpi and mpicc.mpich (ci/compare.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
# shellcheck source=ci/lib/packages.sh
. ci/lib/packages.sh
REPS=5 SIZES=8,64k,1m ITERS=10000
while [ $# -gt 0 ]; do
  case $1 in
    --reps) REPS=$2; shift 2;;
    --sizes) SIZES=$2; shift 2;;
    --iters) ITERS=$2; shift 2;;
    *) echo "rma.sh: unknown option $1" >&2; exit 2;;
  esac
done
ci_packages_ensure openmpi-bin libopenmpi-dev mpich libmpich-dev make gcc || {
  echo "rma.sh: could not install Open MPI and MPICH (see above)" >&2; exit 1; }
prefix=${CARGO_TARGET_DIR:-$ROOT/target}/compare-mpi-prefix
bash ci/mpi-install.sh "$prefix" >/dev/null
make -s -C benches/compare build/mpi_rma.ompi build/mpi_rma.mpich
make -s -C benches/compare build/mpi_rma.ferry FERRY_MPICC="$prefix/bin/mpicc"
bin=benches/compare/build/mpi_rma
raw=docs/perf/raw/rma
rm -rf "$raw"; mkdir -p "$raw"
PIN='exec taskset -c $PMI_RANK "$0" "$@"'
launch() { # PEER -> the command prefix
  case $1 in
    ferry) echo "$prefix/bin/mpiexec -n 2 sh -c \$PIN";;
    ompi) echo "mpirun.openmpi --allow-run-as-root -np 2 --bind-to core --map-by core";;
    mpich) echo "mpiexec.hydra -n 2 -bind-to core";;
  esac
}
for rep in $(seq 1 "$REPS"); do
  for op in put get acc fop cas; do
    sizes=$SIZES
    [ "$op" = fop ] || [ "$op" = cas ] && sizes=8
    for peer in ferry ompi mpich; do
      out="$raw/$peer-$op-rep$rep.txt"
      case $peer in
        ferry) timeout 300 "$prefix/bin/mpiexec" -n 2 sh -c "$PIN" "$bin.ferry" "$op" "$sizes" "$ITERS" >"$out" 2>/dev/null ;;
        *) # shellcheck disable=SC2046
           timeout 300 $(launch "$peer") "$bin.$peer" "$op" "$sizes" "$ITERS" >"$out" 2>/dev/null ;;
      esac || echo "# FAILED (exit $?)" >>"$out"
    done
  done
  echo "[rma] repetition $rep of $REPS done" >&2
done
python3 - "$raw" "$REPS" "$ITERS" >docs/perf/rma.md <<'PY'
import glob, os, statistics, sys
raw, reps, iters = sys.argv[1], int(sys.argv[2]), sys.argv[3]
data = {}
for p in glob.glob(os.path.join(raw, '*.txt')):
    peer, op, _ = os.path.basename(p)[:-4].split('-')
    for line in open(p):
        if line.startswith('#') or not line.strip():
            continue
        f = line.split()
        data.setdefault((op, int(f[0]), peer), []).append((float(f[1]), float(f[2])))
print('# One-sided latency on shared memory (issue 39)\n')
print(f'`benches/compare/rma.sh --reps {reps} --iters {iters}`: `src/mpi_rma.c` (OSU\'s latency loops: `MPI_Win_lock_all`,')
print('a flush after each operation, the target in `MPI_Barrier`) built with each MPI\'s `mpicc`, 2 ranks pinned to')
print('cores 0 and 1, the peers alternating run by run; Open MPI and MPICH with their defaults. Figures: medians')
print('over the repetitions of the average (µs per operation and its flush) and of the median of 100 batches;')
print('ratio = ferry / best peer on the average (below 1: ferry faster).\n')
print('| op | size | ferry avg / p50 | Open MPI avg / p50 | MPICH avg / p50 | ferry / best |')
print('|---|---|---|---|---|---|')
ops = ['put', 'get', 'acc', 'fop', 'cas']
for op in ops:
    sizes = sorted({k[1] for k in data if k[0] == op})
    for s in sizes:
        cells, avgs = [], {}
        for peer in ['ferry', 'ompi', 'mpich']:
            v = data.get((op, s, peer))
            if not v:
                cells.append('failed'); continue
            a = statistics.median(x[0] for x in v); p = statistics.median(x[1] for x in v)
            avgs[peer] = a
            cells.append(f'{a:.2f} / {p:.2f}')
        best = min((avgs[p] for p in ('ompi', 'mpich') if p in avgs), default=None)
        ratio = f'{avgs["ferry"] / best:.2f}' if best and 'ferry' in avgs else '-'
        print(f'| {op} | {s} | ' + ' | '.join(cells) + f' | {ratio} |')
PY
echo "[rma] wrote docs/perf/rma.md" >&2
