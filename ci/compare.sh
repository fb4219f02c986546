#!/usr/bin/env bash
# ci/compare.sh — ferry side by side with Open MPI, MPICH, UCX and libfabric
# (issue 4, section 3). Works from a fresh clone:
#   1. installs the peers' Debian packages if missing (apt-get; sudo if not root);
#   2. builds ferry-bench and ferryrun (cargo --release) and the C peer
#      programs in benches/compare/src with mpicc.openmpi and mpicc.mpich;
#   3. runs every peer in alternating repetitions (benches/compare/run.sh),
#      pinned to cores 0 and 1, each run after the machine went idle: the
#      point-to-point suite, then the collectives (run.sh --suite coll);
#   4. writes docs/perf/README.md, docs/perf/*.svg and docs/perf/raw/, and
#      docs/perf/collectives.md, docs/perf/coll-*.svg and docs/perf/raw/coll/
#      (benches/compare/report.py; Python 3 standard library only).
#
# Usage: ci/compare.sh [--reps N] [--quick] [--suite all|p2p|coll]
#                      [--peers "ferry ompi_vader ..."] [--coll-peers "..."] [--no-install]
#   --reps N     repetitions (default 5; medians are taken over them)
#   --quick      1 repetition (unless --reps is given), few sizes, fewer iterations
#   --suite      which comparisons to run (default all: p2p, then coll)
#   --peers      p2p: subset of: ferry ferry_mpi ferry_cma ompi_vader ompi_ucx
#                mpich ucx_posix_cma ucx_sysv ucx_tcp fi_shm fi_tcp
#   --coll-peers coll: subset of: ferry ferry_mpi ompi ompi_vader mpich ompi_ucc
#                ferry_persistent ferry_p2p ferry_async floor (ompi_ucc is skipped, and
#                says why, when this Open MPI has no coll/ucc component; floor is
#                two C threads, the cache-line floor under any barrier)
#   ferry_mpi: the C peers built with ferry's own mpicc (ferry's MPI C ABI,
#   ci/mpi-install.sh into ${CARGO_TARGET_DIR:-target}/compare-mpi-prefix) and
#   run by its mpiexec, pinned as the others: the C layer's cost over
#   ferry-bench.
# Env: MAXWAIT (s, default 20) caps each wait for an idle machine; runs that
#      start busy are flagged in docs/perf/raw/runs.log and in the README.
#      COMPARE_OUT=DIR writes the results somewhere else than docs/perf.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
# shellcheck source=ci/lib/packages.sh
. ci/lib/packages.sh
ci_fail_trap ci/compare.sh

REPS="" QUICK=0 PEERS="" COLL_PEERS="" INSTALL=1 SUITE=all
while [ $# -gt 0 ]; do
  case $1 in
    --reps) REPS=$2; shift 2;;
    --quick) QUICK=1; shift;;
    --peers) PEERS=$2; shift 2;;
    --coll-peers) COLL_PEERS=$2; shift 2;;
    --suite) SUITE=$2; shift 2;;
    --no-install) INSTALL=0; shift;;
    -h|--help) sed -n '2,30p' "$0"; exit 0;;
    *) echo "ci/compare.sh: unknown option $1" >&2; exit 2;;
  esac
done
[ -n "$REPS" ] || { [ $QUICK = 1 ] && REPS=1 || REPS=5; }
case $SUITE in
  all|p2p|coll) ;;
  *) echo "ci/compare.sh: --suite must be all, p2p or coll, not '$SUITE'" >&2; exit 2;;
esac
OUT=${COMPARE_OUT:-$ROOT/docs/perf}
export MAXWAIT=${MAXWAIT:-20}

step() { printf '\n=== %s\n' "$*"; }

step "system packages"
pkgs=(gcc openmpi-bin libopenmpi-dev mpich libmpich-dev ucx-utils libfabric-bin)
missing=()
for p in "${pkgs[@]}"; do ci_package_installed "$p" || missing+=("$p"); done
if [ "${#missing[@]}" -gt 0 ] && [ $INSTALL = 0 ]; then
  echo "missing packages: ${missing[*]} (--no-install given)" >&2; exit 1
fi
ci_packages_ensure "${pkgs[@]}"
for t in cc mpicc.openmpi mpicc.mpich mpirun.openmpi mpiexec.hydra ucx_perftest fi_pingpong taskset python3; do
  command -v "$t" >/dev/null || { echo "ci/compare.sh: $t not found" >&2; exit 1; }
done

step "build ferry-bench, ferryrun and the C peers"
cargo build --release -p ferry-bench -p ferry-launch
make -C benches/compare
# ferry's MPI (the ferry_mpi peer, in both suites' defaults): a prefix with
# its mpicc and mpiexec, and the same C sources built against its mpi.h.
if [[ " ${PEERS:-ferry_mpi} ${COLL_PEERS:-ferry_mpi} " == *" ferry_mpi "* ]]; then
  mpi_prefix="${CARGO_TARGET_DIR:-$ROOT/target}/compare-mpi-prefix"
  bash ci/mpi-install.sh "$mpi_prefix"
  mpi_prefix=$(cd "$mpi_prefix" && pwd)
  make -C benches/compare ferry FERRY_MPICC="$mpi_prefix/bin/mpicc"
  export FERRY_MPI_PREFIX="$mpi_prefix"
fi

QUICK_NOTE="**Quick mode** (\`--quick\`): few sizes, and a tenth of the iterations for UCX and libfabric; for checking the harness, not for figures."
if [ $SUITE != coll ]; then
  step "run ($REPS alternating repetition(s)$([ $QUICK = 1 ] && echo ', quick'))"
  args=(--reps "$REPS" --out "$OUT/raw")
  [ $QUICK = 1 ] && args+=(--quick)
  [ -n "$PEERS" ] && args+=(--peers "$PEERS")
  # results of an earlier run must not mix with this one
  rm -rf "$OUT"/raw/rep*
  benches/compare/run.sh "${args[@]}"

  step "report"
  rargs=(--raw "$OUT/raw" --out "$OUT")
  [ $QUICK = 1 ] && rargs+=(--note "$QUICK_NOTE")
  python3 benches/compare/report.py "${rargs[@]}"
  echo "see $OUT/README.md"
fi

if [ $SUITE != p2p ]; then
  step "collectives: run ($REPS alternating repetition(s)$([ $QUICK = 1 ] && echo ', quick'))"
  args=(--suite coll --reps "$REPS" --out "$OUT/raw/coll")
  [ $QUICK = 1 ] && args+=(--quick)
  [ -n "$COLL_PEERS" ] && args+=(--peers "$COLL_PEERS")
  rm -rf "$OUT"/raw/coll/rep*
  benches/compare/run.sh "${args[@]}"

  step "collectives: report"
  rargs=(--suite coll --raw "$OUT/raw/coll" --out "$OUT")
  [ $QUICK = 1 ] && rargs+=(--note "**Quick mode** (\`--quick\`): sizes 8 B and 1 MiB only, 1 repetition; for checking the harness, not for figures.")
  python3 benches/compare/report.py "${rargs[@]}"
  echo "see $OUT/collectives.md"
fi
