#!/usr/bin/env bash
# benches/compare/rma.sh — issue 39's one-sided figures on shared memory:
# the OSU one-sided set (put, get, accumulate, get-accumulate,
# fetch-and-op and compare-and-swap latency; put and get bandwidth; put
# bidirectional bandwidth), 2 ranks pinned to cores 0 and 1, from
#   - ferry's Rust API: ferry-bench's put-latency ... put-bibw subcommands
#     (OSU's flush synchronization; fence for put-bibw);
#   - src/mpi_rma.c (the same loops: MPI_Win_lock_all and a flush after
#     each operation, 64 operations per flush for bandwidth, fences for
#     put-bibw; the target waits in MPI_Barrier) built with ferry's mpicc,
#     Open MPI's and MPICH's (their defaults);
#   - UCX's ucx_perftest (UCX_TLS=posix,cma): ucp_put_lat, ucp_get,
#     ucp_add, ucp_fadd, ucp_cswap, ucp_put_bw (one-sided UCP calls with no
#     MPI above them);
# alternating peer by peer within each repetition. Medians over the
# repetitions; ratio = ferry / best peer on the headline figure (latency:
# below 1 is ferry faster; bandwidth: above 1 is). Writes docs/perf/rma.md
# and the raw output under docs/perf/raw/rma/.
#
# Usage: benches/compare/rma.sh [--reps N] [--sizes 8,64k,1m] [--iters N]
# Needs mpicc.openmpi, mpicc.mpich and ucx_perftest (installed here).
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
ci_packages_ensure openmpi-bin libopenmpi-dev mpich libmpich-dev ucx-utils make gcc || {
  echo "rma.sh: could not install Open MPI, MPICH and UCX's ucx_perftest (see above)" >&2; exit 1; }
prefix=${CARGO_TARGET_DIR:-$ROOT/target}/compare-mpi-prefix
bash ci/mpi-install.sh "$prefix" >/dev/null
cargo build --release -q -p ferry-bench -p ferry-launch
make -s -C benches/compare build/mpi_rma.ompi build/mpi_rma.mpich
make -s -C benches/compare -B build/mpi_rma.ferry FERRY_MPICC="$prefix/bin/mpicc"
bin=benches/compare/build/mpi_rma
target=${CARGO_TARGET_DIR:-$ROOT/target}/release
raw=docs/perf/raw/rma
rm -rf "$raw"; mkdir -p "$raw"
PIN='exec taskset -c $PMI_RANK "$0" "$@"'
UCX_PORT=13377
# The sizes in bytes (k and m suffixes), for ucx_perftest.
bytes() { local s=${1,,}; case $s in *k) echo $(( ${s%k} << 10 ));; *m) echo $(( ${s%m} << 20 ));; *) echo "$s";; esac; }
sub_of() { # mpi_rma's op -> ferry-bench's subcommand
  case $1 in
    put) echo put-latency;; get) echo get-latency;; acc) echo acc-latency;;
    getacc) echo get-acc-latency;; fop) echo fop-latency;; cas) echo cas-latency;;
    putbw) echo put-bw;; getbw) echo get-bw;; putbibw) echo put-bibw;;
  esac
}
ucx_of() { # mpi_rma's op -> ucx_perftest's test (none: no such test)
  case $1 in
    put) echo ucp_put_lat;; acc) echo ucp_add;; fop) echo ucp_fadd;; cas) echo ucp_cswap;;
    putbw) echo ucp_put_bw;; getbw) echo ucp_get;;
  esac
}
iters_of() { # op size -> iterations (bandwidth: 64 operations each)
  case $1 in
    *bw|*bibw) if [ "$(bytes "$2")" -gt 65536 ]; then echo 200; else echo 1000; fi;;
    *) if [ "$(bytes "$2")" -gt 65536 ]; then echo 1000; else echo "$ITERS"; fi;;
  esac
}
ucx_peer() { # op size out: one ucx_perftest run, a row "size avg p50"
  local t n line
  t=$(ucx_of "$1"); [ -n "$t" ] || return 0
  n=$(iters_of "$1" "$2")
  case $1 in *bw) n=$((n * 64));; esac
  UCX_TLS=posix,cma timeout 120 taskset -c 0 ucx_perftest -p $UCX_PORT -c 0 >/dev/null 2>&1 &
  local spid=$!
  sleep 0.5
  line=$(UCX_TLS=posix,cma timeout 120 taskset -c 1 ucx_perftest localhost -p $UCX_PORT -t "$t" \
    -s "$(bytes "$2")" -n "$n" -w $((n / 10)) -c 1 -f -v 2>/dev/null | tail -1) || true
  wait $spid || true
  # iterations,p50_lat,avg_lat,overall_lat,avg_bw(MiB/s),overall_bw,avg_mr,overall_mr
  IFS=, read -r _ p50 _ lat _ obw _ _ <<<"$line"
  case "$lat" in ''|*[!0-9.]*) echo "# FAILED: '$line'" >>"$3"; return 0;; esac
  case $1 in
    *bw) awk -v s="$(bytes "$2")" -v b="$obw" 'BEGIN{printf "%s %.1f %.1f\n", s, b*1.048576, b*1.048576}' >>"$3";;
    *) echo "$(bytes "$2") $lat $p50" >>"$3";;
  esac
}
for rep in $(seq 1 "$REPS"); do
  for op in put get acc getacc fop cas putbw getbw putbibw; do
    sizes=$SIZES
    case $op in fop|cas) sizes=8;; esac
    for s in ${sizes//,/ }; do
      it=$(iters_of $op "$s")
      for peer in rust ferry ompi mpich ucx; do
        out="$raw/$peer-$op-rep$rep.txt"
        case $peer in
          rust) timeout 300 "$target/ferryrun" -n 2 sh -c "$PIN" "$target/ferry-bench" "$(sub_of $op)" \
                  --sizes "$s" --iters "$it" --warmup $((it / 10)) 2>/dev/null | grep -v '^#' >>"$out" ;;
          ferry) timeout 300 "$prefix/bin/mpiexec" -n 2 sh -c "$PIN" "$bin.ferry" "$op" "$s" "$it" $((it / 10)) \
                   2>/dev/null | grep -v '^#' >>"$out" ;;
          ompi) timeout 300 mpirun.openmpi --allow-run-as-root -np 2 --bind-to core --map-by core \
                  "$bin.ompi" "$op" "$s" "$it" $((it / 10)) 2>/dev/null | grep -v '^#' >>"$out" ;;
          mpich) timeout 300 mpiexec.hydra -n 2 -bind-to core "$bin.mpich" "$op" "$s" "$it" $((it / 10)) \
                   2>/dev/null | grep -v '^#' >>"$out" ;;
          ucx) ucx_peer $op "$s" "$out" ;;
        esac || echo "# FAILED $s (exit $?)" >>"$out"
      done
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
        f = line.split()
        if line.startswith('#') or len(f) < 3:
            continue
        data.setdefault((op, int(f[0]), peer), []).append((float(f[1]), float(f[2])))
peers = ['rust', 'ferry', 'ompi', 'mpich', 'ucx']
names = {'rust': 'ferry (Rust)', 'ferry': 'ferry (C ABI)', 'ompi': 'Open MPI', 'mpich': 'MPICH', 'ucx': 'UCX (UCP)'}
print('# One-sided communication on shared memory (issue 39)\n')
print(f'`benches/compare/rma.sh --reps {reps} --iters {iters}`, 2 ranks pinned to cores 0 and 1, the peers')
print('alternating run by run. ferry (Rust): `ferry-bench put-latency` ... `put-bibw` (OSU\'s flush')
print('synchronization: a shared lock held, an operation and a flush per iteration; fences for put-bibw).')
print('ferry (C ABI), Open MPI, MPICH: `src/mpi_rma.c`, the same loops (`MPI_Win_lock_all`, a flush after')
print('each operation; 64 operations per flush for bandwidth; fences for put-bibw) built with each')
print('`mpicc`, Open MPI and MPICH with their defaults. UCX: `ucx_perftest` over `posix,cma` (`ucp_put_lat`,')
print('`ucp_add` for acc, `ucp_fadd`, `ucp_cswap`, `ucp_put_bw`, `ucp_get`), one-sided UCP with no MPI')
print('above it, where it has the operation. Figures: medians over the repetitions; latency in µs per')
print('operation and its flush (avg / p50), bandwidth in MB/s. Ratios: ferry / best MPI peer (Open MPI,')
print('MPICH) and / best of all (with UCX) on the first figure; latency below 1 and bandwidth above 1 are')
print('ferry ahead.\n')
print('| op | size | ' + ' | '.join(names[p] for p in peers) + ' | Rust / best MPI | C / best MPI | Rust / best |')
print('|---|---|' + '---|' * (len(peers) + 3))
for op in ['put', 'get', 'acc', 'getacc', 'fop', 'cas', 'putbw', 'getbw', 'putbibw']:
    bw = op.endswith('bw')
    better = max if bw else min
    for s in sorted({k[1] for k in data if k[0] == op}):
        cells, head = [], {}
        for peer in peers:
            v = data.get((op, s, peer))
            if not v:
                cells.append('-' if peer == 'ucx' else 'failed'); continue
            a = statistics.median(x[0] for x in v); p = statistics.median(x[1] for x in v)
            head[peer] = a
            cells.append(f'{a:.1f}' if bw else f'{a:.3f} / {p:.3f}')
        mpi = [head[p] for p in ('ompi', 'mpich') if p in head]
        every = mpi + ([head['ucx']] if 'ucx' in head else [])
        ratio = lambda who, pool: f'{head[who] / better(pool):.2f}' if who in head and pool else '-'
        print(f'| {op} | {s} | ' + ' | '.join(cells) + f' | {ratio("rust", mpi)} | {ratio("ferry", mpi)} | {ratio("rust", every)} |')
PY
# The passive-target epoch: 1,000 puts of 8 B under an exclusive lock,
# target idle inside ferry, then computing without calling it (2 s), on
# the node window and on the private one (messages); spin waiting too.
{
  echo
  echo '## A passive-target epoch while the target computes'
  echo
  echo '`ferry-bench passive-epoch --window 1000` (rank 0: lock, 1,000 puts of 8 B, unlock; rank 1 first idle'
  echo 'inside ferry, then computing for 2 s without calling it; µs per epoch, 20 epochs, pinned):'
  echo
  echo '| window | waiting | idle µs | busy µs | busy / idle |'
  echo '|---|---|---|---|---|'
  for kind in node private; do
    for mode in hybrid spin; do
      flag=; [ $kind = private ] && flag=--private
      row=$(FERRY_WAIT_MODE=$mode timeout 300 "$target/ferryrun" -n 2 sh -c "$PIN" "$target/ferry-bench" passive-epoch \
              --window 1000 $flag 2>/dev/null | grep -v '^#' | tail -1)
      read -r _ idle busy ratio <<<"$row"
      echo "| $kind | $mode | $idle | $busy | $ratio |"
    done
  done
} >>docs/perf/rma.md
echo "[rma] wrote docs/perf/rma.md" >&2
