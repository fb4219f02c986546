#!/usr/bin/env bash
# ci/verbs-init.sh — what setting up the verbs device costs per rank, with
# lazy connections and with every peer connected (the cost of connecting at
# init), for 2, 4 and 8 ranks, inside the Soft-RoCE VM (ci/softroce.sh).
# Runs verbs/examples/init_cost.rs (one thread per rank; see its docs) REPS
# times (default 3) in one VM boot.
#
# Usage: ci/verbs-init.sh [ranks...]     (default: 2 4 8)
# Env:   REPS, CARGO_TARGET_DIR, FERRY_VM_* knobs of ci/softroce.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
target=${CARGO_TARGET_DIR:-target}
case $target in /*) ;; *) target=$ROOT/$target;; esac
export CARGO_TARGET_DIR=$target
cargo build -p ferry-verbs --release --locked --example init_cost
bin=$target/release/examples/init_cost
sizes=${*:-2 4 8}
cmds=()
for _ in $(seq "${REPS:-3}"); do cmds+=("$bin $sizes"); done
FERRY_VM_SMP=${FERRY_VM_SMP:-2} FERRY_VERBS_REQUIRE=1 "$ROOT/ci/softroce.sh" -f "$bin" -- "${cmds[@]}"
