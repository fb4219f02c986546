#!/bin/bash
# Issue 16's bandwidth figures, in one run: ferry's osu_bw from 4 KiB to
# 4 MiB and osu_bibw at 1 MiB against every shared-memory peer, in
# ALTERNATING repetitions (medians); then the spread of ferry's 1 MiB
# bandwidth over LAUNCHES launches in a row; and the machine's own memcpy and
# process_vm_readv rates (from ferry-info), so results from different
# machines can be compared. Every run is pinned to cores 0 and 1 and waits for
# a quiet machine first (wait_quiet.sh).
#
# Usage: benches/compare/bandwidth.sh [--reps N] [--launches L] [--out FILE] [--env "VAR=V ..."]
#   --reps 3, --launches 10, --out docs/perf/bandwidth.md (raw results beside
#   it in docs/perf/raw/bandwidth/); --env adds settings to ferry's runs only
#   (to try a variant: --env "FERRY_SHM_CELLS=64" --out /tmp/x.md).
# Needs: target/release/{ferry-bench,ferryrun,ferry-info} (cargo build
#   --release), build/mpi_bw.* and build/mpi_bibw.* (make -C benches/compare),
#   ucx_perftest, mpirun.openmpi, mpiexec.hydra (ci/compare.sh installs them).
# Env: BW_PEERS (default "ferry ferry_mpi ompi_vader ompi_ucx mpich ucx_sysv ucx_posix_cma"),
#   FERRY_MPI_PREFIX (ferry's MPI C ABI, ci/mpi-install.sh PREFIX; for the
#   ferry_mpi peer, with build/mpi_bw.ferry, build/mpi_bibw.ferry from
#   make -C benches/compare ferry FERRY_MPICC=PREFIX/bin/mpicc),
#   MAXWAIT (wait_quiet.sh: seconds to wait for a quiet machine, default 60).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
REPS=3 LAUNCHES=10 OUT=$ROOT/docs/perf/bandwidth.md FERRY_ENV=""
while [ $# -gt 0 ]; do
  case $1 in
    --reps) REPS=$2; shift 2;;
    --launches) LAUNCHES=$2; shift 2;;
    --out) OUT=$2; shift 2;;
    --env) FERRY_ENV=$2; shift 2;;
    *) echo "bandwidth.sh: unknown option $1" >&2; exit 2;;
  esac
done
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
case $TARGET in /*) ;; *) TARGET=$ROOT/$TARGET;; esac
FB=$TARGET/release/ferry-bench FR=$TARGET/release/ferryrun FI=$TARGET/release/ferry-info
BIN=${COMPARE_BUILD:-$HERE/build}
for f in "$FB" "$FR" "$FI" "$BIN/mpi_bw.ompi" "$BIN/mpi_bibw.ompi" "$BIN/mpi_bw.mpich" "$BIN/mpi_bibw.mpich"; do
  [ -x "$f" ] || { echo "bandwidth.sh: $f is missing (cargo build --release; make -C benches/compare)" >&2; exit 2; }
done
for t in ucx_perftest mpirun.openmpi mpiexec.hydra taskset python3; do
  command -v $t >/dev/null || { echo "bandwidth.sh: $t is not installed (ci/compare.sh installs the peers)" >&2; exit 2; }
done
RAW=$(dirname "$OUT")/raw/bandwidth
rm -rf "$RAW"; mkdir -p "$RAW"
LOG=$RAW/runs.log; : >"$LOG"
SIZES=4096,8192,16384,65536,262144,1048576,4194304
BIBW=1048576
OMPI="mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 --bind-to core --map-by core"
MPICH="mpiexec.hydra -n 2 -bind-to core"
PIN='exec taskset -c $PMI_RANK "$0" "$@"'
UCX_PORT=${UCX_PORT:-13347}

log() { echo "$(date -u +%T) $*" >>"$LOG"; }
quiet() { "$HERE/wait_quiet.sh" 2>>"$LOG" || log "NOISY: $1 ran on a busy machine"; }
# run_to FILE CMD...: the rows of a ferry-bench-format run into FILE
run_to() {
  local f=$1; shift
  log "run $(basename "$f"): $*"
  timeout 600 "$@" 2>>"$LOG" | grep -v '^#' >"$f" || log "FAILED: $(basename "$f")"
}
# shellcheck disable=SC2206 # FERRY_ENV is a list of VAR=VALUE words
FERRY=(env $FERRY_ENV FERRY_DEVICE=shm "$FR" -n 2 --timeout 600 sh -c "$PIN" "$FB")

peer_ferry() {
  quiet ferry.bw; run_to "$1/ferry.bw" "${FERRY[@]}" bw --sizes $SIZES
  quiet ferry.bibw; run_to "$1/ferry.bibw" "${FERRY[@]}" bibw --sizes $BIBW
}
mpi_peer() { # dir name suffix launcher...
  local d=$1 name=$2 suf=$3; shift 3
  quiet "$name.bw"; run_to "$d/$name.bw" "$@" "$BIN/mpi_bw.$suf" $SIZES
  quiet "$name.bibw"; run_to "$d/$name.bibw" "$@" "$BIN/mpi_bibw.$suf" $BIBW
}
peer_ompi_vader() { mpi_peer "$1" ompi-vader ompi $OMPI --mca pml ob1 --mca btl self,vader; }
peer_ompi_ucx() { mpi_peer "$1" ompi-ucx ompi $OMPI --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any; }
peer_mpich() { mpi_peer "$1" mpich mpich $MPICH; }
ucx_peer() { # dir name tls: ucx_perftest tag_bw per size, rows "size MB/s"
  local d=$1 name=$2 tls=$3 s n line
  : >"$d/$name.bw"
  for s in ${SIZES//,/ }; do
    if [ $s -le 65536 ]; then n=20000; elif [ $s -le 1048576 ]; then n=2000; else n=500; fi
    quiet "$name.$s"
    UCX_TLS=$tls timeout 120 taskset -c 0 ucx_perftest -p $UCX_PORT -c 0 >>"$LOG" 2>&1 &
    local spid=$!
    sleep 0.5
    line=$(UCX_TLS=$tls timeout 120 taskset -c 1 ucx_perftest localhost -p $UCX_PORT -t tag_bw -s $s \
      -n $n -w $((n / 10)) -c 1 -f -v 2>>"$LOG" | tail -1) || log "FAILED: $name $s"
    wait $spid || log "ucx server exited with $? ($name $s)"
    # iterations,p50_lat,avg_lat,overall_lat,avg_bw(MiB/s),overall_bw,avg_mr,overall_mr
    IFS=, read -r _ _ _ _ _ obw _ _ <<<"$line"
    case "$obw" in ''|*[!0-9.]*) log "FAILED: $name $s: '$line'"; continue;; esac
    awk -v s=$s -v b=$obw 'BEGIN{printf "%s %.1f\n", s, b*1.048576}' >>"$d/$name.bw"
  done
}
# The same C loops as the MPI peers (one receive buffer for the whole window,
# as osu_bw), built with ferry's mpicc and run by its mpiexec on shm: the
# like-for-like figure, where ferry-bench's owned receives need 64 buffers.
peer_ferry_mpi() {
  [ -x "${FERRY_MPI_PREFIX:-}/bin/mpiexec" ] && [ -x "$BIN/mpi_bw.ferry" ] && [ -x "$BIN/mpi_bibw.ferry" ] || {
    log "ferry_mpi skipped: set FERRY_MPI_PREFIX=PREFIX (ci/mpi-install.sh PREFIX) and make -C benches/compare ferry FERRY_MPICC=PREFIX/bin/mpicc"
    return 0; }
  mpi_peer "$1" ferry-mpi ferry env $FERRY_ENV FERRY_DEVICE=shm "$FERRY_MPI_PREFIX/bin/mpiexec" -n 2 --timeout 600 sh -c "$PIN"
}
peer_ucx_sysv() { ucx_peer "$1" ucx-sysv sysv; }
peer_ucx_posix_cma() { ucx_peer "$1" ucx-posix-cma posix,cma; }
PEERS=${BW_PEERS:-"ferry ferry_mpi ompi_vader ompi_ucx mpich ucx_sysv ucx_posix_cma"}

echo "bandwidth.sh: $REPS repetitions of every peer, then $LAUNCHES launches of ferry at 1 MiB (log: $LOG)" >&2
"$FI" >"$RAW/ferry-info.txt" 2>&1 || true
for rep in $(seq "$REPS"); do
  d=$RAW/rep$rep; mkdir -p "$d"
  for p in $PEERS; do "peer_$p" "$d"; done
  echo "bandwidth.sh: repetition $rep of $REPS done" >&2
done
: >"$RAW/spread"
: >"$RAW/spread-mpi"
for i in $(seq "$LAUNCHES"); do
  quiet "spread.$i"
  timeout 600 "${FERRY[@]}" bw --sizes 1048576 2>>"$LOG" | grep -v '^#' >>"$RAW/spread" || log "FAILED: spread $i"
  if [[ " $PEERS " == *" ferry_mpi "* ]] && [ -x "${FERRY_MPI_PREFIX:-}/bin/mpiexec" ]; then
    quiet "spread-mpi.$i"
    timeout 600 env $FERRY_ENV FERRY_DEVICE=shm "$FERRY_MPI_PREFIX/bin/mpiexec" -n 2 --timeout 600 sh -c "$PIN" \
      "$BIN/mpi_bw.ferry" 1048576 2>>"$LOG" | grep -v '^#' >>"$RAW/spread-mpi" || log "FAILED: spread-mpi $i"
  fi
done
python3 "$HERE/bandwidth_report.py" "$RAW" "$OUT" "$REPS" "$FERRY_ENV"
echo "bandwidth.sh: wrote $OUT" >&2
