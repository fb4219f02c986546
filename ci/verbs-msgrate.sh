#!/usr/bin/env bash
# ci/verbs-msgrate.sh — the 8-byte message rate (window 64) of ferry's verbs
# device against perftest's ib_send_bw (8 B) in ONE Soft-RoCE VM boot
# (ci/softroce.sh), alternated REPS times (default 5):
#   ib_send_bw -s 8 (server and client on rxe0, GID index 1): one
#     ibv_post_send per message, and with -l 32: lists of 32 (one doorbell)
#   ferry-bench mbw-mr --sizes 8 with FERRY_VERBS_SIGNAL_EVERY=1 (a completion
#     per send: the behaviour before selective signalling) and =16 (default)
#   the same with --batch: each window's sends in one Comm::batch, posted as
#     chains of up to 32 (doorbell batching, verbs/src/doorbell.rs)
# Take medians by hand (the VM is emulated and noisy; see docs/perf/verbs.md).
#
# Usage: ci/verbs-msgrate.sh      Env: REPS, ITERS (ferry, default 200),
#        CARGO_TARGET_DIR, FERRY_VM_* knobs of ci/softroce.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
target=${CARGO_TARGET_DIR:-target}
case $target in /*) ;; *) target=$ROOT/$target;; esac
export CARGO_TARGET_DIR=$target
cargo build --release --locked -p ferry-bench --features verbs --bin ferry-bench
cargo build --release --locked -p ferry-launch --bin ferryrun
R=$target/release
unset FERRY_VERBS_DEVICE
PT="ib_send_bw -d rxe0 -x 1 -s 8 -n 20000 -F"
FB="$R/ferryrun -n 2 $R/ferry-bench mbw-mr --wait-mode spin --sizes 8 --iters ${ITERS:-200} --warmup 10"
cmds=()
for i in $(seq "${REPS:-5}"); do
  cmds+=("echo '## rep $i: ib_send_bw 8 B'; ($PT >/dev/null 2>&1 &) ; sleep 1; $PT 10.99.0.1 | grep -A1 'MsgRate' | tail -1")
  cmds+=("echo '## rep $i: ib_send_bw 8 B, post lists of 32'; ($PT -l 32 >/dev/null 2>&1 &) ; sleep 1; $PT -l 32 10.99.0.1 | grep -A1 'MsgRate' | tail -1")
  cmds+=("echo '## rep $i: ferry signal_every=1'; FERRY_DEVICE=verbs FERRY_VERBS_SIGNAL_EVERY=1 $FB | tail -1")
  cmds+=("echo '## rep $i: ferry signal_every=16'; FERRY_DEVICE=verbs FERRY_VERBS_SIGNAL_EVERY=16 $FB | tail -1")
  cmds+=("echo '## rep $i: ferry signal_every=16 --batch'; FERRY_DEVICE=verbs FERRY_VERBS_SIGNAL_EVERY=16 $FB --batch | tail -1")
done
FERRY_VM_SMP=${FERRY_VM_SMP:-2} FERRY_VERBS_REQUIRE=1 "$ROOT/ci/softroce.sh" -f "$R/ferryrun" -f "$R/ferry-bench" -- "${cmds[@]}"
