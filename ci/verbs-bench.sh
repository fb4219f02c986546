#!/usr/bin/env bash
# ci/verbs-bench.sh — ferry-bench latency and bw over the verbs device, alternated
# with perftest (ib_send_lat / ib_write_lat / ib_read_lat, *_bw) in the same
# Soft-RoCE VM boot, through ci/perftest-vm.sh's --ferry hook. The ratios are
# written up in docs/perf/verbs.md (by hand: the VM is emulated and noisy).
#
# Usage: ci/verbs-bench.sh [poll|events] [extra ci/perftest-vm.sh args...]
#   poll (default): 2 vCPUs, perftest polling, ferry --wait-mode spin
#   events:         1 vCPU, perftest -e, ferry --wait-mode passive
# Each ferry benchmark runs twice per repetition: with the registration cache
# (the default) and with FERRY_VERBS_RCACHE=0 (every rendezvous registers and
# deregisters, the behaviour before the cache), so "before" and "after" come
# from the same boot.
# Output: the OSU-style table on stdout; the Markdown report in
# ${CARGO_TARGET_DIR:-target}/verbs-bench-MODE.md (never over the docs).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
MODE=${1:-poll}
shift || true
case $MODE in
  poll) WAIT=spin;;
  events) WAIT=passive;;
  *) echo "usage: ci/verbs-bench.sh [poll|events] [perftest-vm args...]" >&2; exit 2;;
esac
target=${CARGO_TARGET_DIR:-target}
case $target in /*) ;; *) target=$ROOT/$target;; esac
export CARGO_TARGET_DIR=$target
cargo build --release --locked -p ferry-bench --features verbs --bin ferry-bench
cargo build --release --locked -p ferry-launch --bin ferryrun
R=$target/release
unset FERRY_VERBS_DEVICE
LAT="$R/ferryrun -n 2 $R/ferry-bench latency --wait-mode $WAIT --sizes 8,65536 --iters 500 --warmup 50"
BW="$R/ferryrun -n 2 $R/ferry-bench bw --wait-mode $WAIT --sizes 8,65536,1048576 --iters 20 --warmup 2"
exec "$ROOT/ci/perftest-vm.sh" --mode "$MODE" --reps 3 -f "$R/ferryrun" -f "$R/ferry-bench" \
  --ferry "FERRY_DEVICE=verbs $LAT" \
  --ferry "FERRY_DEVICE=verbs $BW" \
  --ferry "FERRY_DEVICE=verbs FERRY_VERBS_RCACHE=0 $LAT" \
  --ferry "FERRY_DEVICE=verbs FERRY_VERBS_RCACHE=0 $BW" \
  --out "$target/verbs-bench-$MODE.md" "$@"
