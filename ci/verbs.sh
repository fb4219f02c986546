#!/usr/bin/env bash
# ci/verbs.sh — the verbs device's CI: build with --features verbs, lint it, then
# run its tests for real on Soft-RoCE (rxe0) inside ONE throw-away VM boot
# (ci/softroce.sh):
#   1. the device tests of ferry-verbs (each "rank" a thread; send/recv, order,
#      credits under a flood, inline, get/put, ARecv handover, arm/wait_fd,
#      the stale-registration test, dead-peer detection);
#   2. the conformance suite (tests/tests/conformance_verbs.rs: every body
#      through ferryrun with 2 and 4 ranks, FERRY_DEVICE=verbs);
#   3. the failure scenarios on verbs (tests/tests/failure_verbs.rs: rank 1
#      SIGKILLed; the survivors' waits fail naming it, the job ends);
#   4. jobs across two hosts (tests/tests/cluster.rs on ci/vm/cluster-hosts.sh's
#      hosts, launched by MPICH's Hydra through ci/cluster/ns-ssh): ferry-info's
#      routes, then the conformance suite with 2 ranks per host, shm inside a
#      host and verbs between them;
#   5. the ofi device over libfabric's verbs;ofi_rxm on rxe0, the one provider
#      that needs local registration (FI_MR_LOCAL, with PROV_KEY, VIRT_ADDR and
#      ALLOCATED): first a check that ferry-info reports it with mr_mode
#      "local" (so this stage cannot silently test a provider that registers
#      nothing), then ferry-ofi's device tests on it (FERRY_OFI_RDMA_REQUIRE=1:
#      they fail instead of skipping, and fail if FI_MR_LOCAL is no longer
#      demanded), then the conformance suite (tests/tests/conformance_ofi_verbs.rs,
#      4 ranks through ferryrun). FI_UNIVERSE_SIZE=64: rxm sizes its
#      completion queue for that many peers, and the default 256 is past
#      rxe's max_cqe (ofi/src/lib.rs). The device tests run every rank as a
#      thread of one process, so they also set FI_MR_CACHE_MONITOR=disabled:
#      libfabric's default "memhooks" monitor patches munmap's code when a
#      verbs domain opens and closes, and a rank's thread inside munmap at
#      that moment dies with SIGSEGV (ofiwg/libfabric#7569, #10943; seen in
#      CI on 2026-12-01, at __munmap+9);
#   6. last, the device test that takes the port down (ip link set dummy0
#      down: every peer fails with the typed async-event error; #[ignore]d in
#      plain runs; it brings the link back up).
# FERRY_VERBS_DEVICE is unset, so the default device selection is what runs.
# Inside the VM FERRY_VERBS_REQUIRE=1: a verbs test that finds no RDMA device
# fails instead of skipping. A VM that does not boot fails (ci/softroce.sh
# exits 124/125). Conformance bodies that skip print "*** ... SKIPPED".
#
# Usage: ci/verbs.sh            (from any directory; works from a fresh clone)
# Env:   CARGO_TARGET_DIR (default target), FERRY_VM_* knobs of ci/softroce.sh
#        (FERRY_VM_TIMEOUT defaults to 1800 s here; FERRY_VM_SMP to 2).
#        FERRY_VERBS_SKIP_CLIPPY=1 skips the lint step.
# Exit status: non-zero if any build, lint or test failed, or the VM failed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
# shellcheck source=ci/lib/packages.sh
. ci/lib/packages.sh
ci_fail_trap ci/verbs.sh
step() { printf '\n=== %s\n' "$*"; }
T0=$(date +%s)

step "system packages (libibverbs-dev, librdmacm-dev, libfabric-dev, clang, pkg-config)"
# libfabric-dev: the ofi stage (Debian's libfabric 1.17 has the verbs provider).
ci_packages_ensure libibverbs-dev librdmacm-dev libfabric-dev pkg-config clang libclang-dev

# As ci/test.sh does: the release-built tests need no fat LTO (Cargo.toml's
# release profile, for the programs users run), which would cost minutes.
export CARGO_PROFILE_RELEASE_LTO=${CARGO_PROFILE_RELEASE_LTO:-false}

target=${CARGO_TARGET_DIR:-target}
case $target in /*) ;; *) target=$ROOT/$target;; esac
export CARGO_TARGET_DIR=$target

# Prints the test executable named $1 (deps/$1-<hash>) among those cargo built
# (from its JSON messages; a --no-run build also reports the package's binaries).
executable() { grep -o '"executable":"[^"]*"' | sed 's/"executable":"//; s/"$//' | grep "/deps/$1-[0-9a-f]*$" | head -1; }

step "build: ferry-verbs and ferry-ofi device tests (debug)"
unit=$(cargo test -p ferry-verbs --locked --no-run --message-format=json | executable ferry_verbs)
[ -x "$unit" ] || { echo "ci/verbs.sh: no ferry-verbs test binary" >&2; exit 1; }
ofiunit=$(cargo test -p ferry-ofi --locked --no-run --message-format=json | executable ferry_ofi)
[ -x "$ofiunit" ] || { echo "ci/verbs.sh: no ferry-ofi test binary" >&2; exit 1; }

step "build: conformance suites with --features verbs,ofi (release: the VM is emulated)"
# Release, because the suite's flood bodies send ~100k messages and the VM
# may run under TCG; the runner and launcher binaries are built alongside.
# One build for both devices: the ofi feature only adds the ofi device to the
# same binaries, and conformance_ofi_verbs.rs is one more test executable.
json=$(cargo test -p ferry-tests --features verbs,ofi,cluster --release --locked --no-run \
  --test conformance_verbs --test failure_verbs --test cluster --test conformance_ofi_verbs \
  --message-format=json)
conf=$(executable conformance_verbs <<<"$json")
fail=$(executable failure_verbs <<<"$json")
cluster=$(executable cluster <<<"$json")
confofi=$(executable conformance_ofi_verbs <<<"$json")
cargo build -p ferry-tests --features verbs,ofi,cluster --release --locked --bins
cargo build -p ferry --features verbs,ofi --release --locked --bin ferry-info
[ -x "$conf" ] && [ -x "$fail" ] && [ -x "$cluster" ] && [ -x "$confofi" ] \
  || { echo "ci/verbs.sh: test binaries missing" >&2; exit 1; }
bins=("$target/release/ferry-conformance" "$target/release/ferry-tests-ferryrun" "$target/release/ferry-info")

# The two-host jobs (ci/vm/cluster-hosts.sh) start through MPICH's Hydra.
ci_packages_ensure mpich
hydra=()
for x in /usr/bin/mpiexec.hydra /usr/bin/hydra_pmi_proxy; do
  hydra+=(-f "$x")
  for lib in $(ldd "$x" | grep -oE '/[^ ]+'); do hydra+=(-f "$lib"); done
done

if [ "${FERRY_VERBS_SKIP_CLIPPY:-0}" != 1 ]; then
  step "clippy: ferry-verbs (-D warnings)"
  cargo clippy -p ferry-verbs --all-targets --locked -- -D warnings
  cargo fmt -p ferry-verbs -- --check
fi

step "Soft-RoCE VM: device tests + conformance suites, verbs and ofi over verbs;ofi_rxm (one boot)"
unset FERRY_VERBS_DEVICE
export FERRY_VERBS_REQUIRE=1
export FERRY_VM_TIMEOUT=${FERRY_VM_TIMEOUT:-1800}
export FERRY_VM_SMP=${FERRY_VM_SMP:-2}
V0=$(date +%s)
set +e
export FERRY_OFI_RDMA_REQUIRE=1
"$ROOT/ci/softroce.sh" -f "$unit" -f "$ofiunit" -f "$conf" -f "$fail" -f "$cluster" -f "$confofi" \
  -f "${bins[0]}" -f "${bins[1]}" -f "${bins[2]}" "${hydra[@]}" \
  -f "$ROOT/ci/cluster" -f "$ROOT/ci/vm/cluster-hosts.sh" -f "$ROOT/ci/vm/ofi-mr-check.sh" -- \
  'echo "[verbs] FERRY_VERBS_DEVICE=${FERRY_VERBS_DEVICE:-<unset>}"; ibv_devices' \
  "$unit --test-threads=1 --nocapture" \
  "$conf --test-threads=1 --nocapture" \
  "$fail --test-threads=1 --nocapture" \
  "sh $ROOT/ci/vm/cluster-hosts.sh $cluster --test-threads=1 --nocapture" \
  "FI_UNIVERSE_SIZE=64 sh $ROOT/ci/vm/ofi-mr-check.sh ${bins[2]}" \
  "FI_UNIVERSE_SIZE=64 FI_MR_CACHE_MONITOR=disabled $ofiunit --test-threads=1 verbs_rxm rdma::" \
  "FI_UNIVERSE_SIZE=64 FERRY_TEST_JOB_TIMEOUT=400 $confofi --test-threads=1 --nocapture" \
  "$unit --test-threads=1 --nocapture --ignored --exact tests::events::a_port_going_down_fails_every_peer_with_a_typed_error"
rc=$?
set -e
echo "ci/verbs.sh: VM run took $(( $(date +%s) - V0 )) s (status $rc); total $(( $(date +%s) - T0 )) s"
exit $rc
