#!/usr/bin/env bash
# ci/test.sh — the README's test command: everything CI checks, runnable by a person.
#
# Installs what it needs (MPICH for mpiexec.hydra; libfabric-dev,
# libibverbs-dev, librdmacm-dev, clang for the network devices; ci/softroce.sh
# installs QEMU and the rest of the VM's parts) through ci/lib/packages.sh,
# whose checks are safe for packages a fresh machine has never heard of (its
# self-test runs first). Then, in order:
#   1. rustfmt and clippy (-D warnings) over the whole workspace, and over the
#      code behind the `ofi` and `verbs` features; rustdoc with -D warnings;
#   2. every test: unit, integration (simulation, proptest), doc tests; the
#      attack tests of SECURITY.md among them (tests/security.rs, as root:
#      another user's process made with setpriv);
#   3. the loom model check of the shm queue;
#   4. the long stress tests that are #[ignore]d in a normal `cargo test`;
#      the README's main job built with fat LTO; the MPI ABI library's C
#      tests (ci/mpi-test.sh: ferry's mpicc, mpiexec and mpiexec.hydra);
#      mpi4py built with ferry's mpicc, and its test suite on 1, 2 and 4
#      ranks (ci/mpi4py-test.sh; python3-venv and python3-dev installed there);
#      MPICH 4.0.2's own one-sided tests (test/mpi/rma from Debian's source
#      package, ci/mpich-testsuite.sh rma: every failure named in
#      ci/mpich-testsuite.expected);
#      HPC Challenge and NetPIPE from Debian's source packages, built
#      unmodified with ferry's mpicc, and their own checks (ci/programs.sh);
#   5. the ofi device on libfabric's tcp;ofi_rxm and shm providers
#      (ci/ofi.sh), then a job split across two "nodes" over shm + ofi, then
#      jobs across two hosts made of network and UTS namespaces, started by
#      Hydra's ssh launcher (ci/cluster.sh, as root);
#   6. Slurm's srun --mpi=pmi2 on a one-node cluster made for the run
#      (ci/slurm.sh: slurmctld, slurmd, munge from Debian): the conformance
#      suite on 4 ranks and ferry-bench latency, over the PMI-2 client;
#      the verbs device on Soft-RoCE in a QEMU VM (ci/verbs.sh);
#   7. a short fuzz run of every decoder of peer-supplied bytes (cargo fuzz),
#      the side-channel handshake's included;
#   8. a smoke run of the criterion benches (each benchmark run once), so they never rot.
#
# Env: FERRY_CI_SKIP_FUZZ=1 / FERRY_CI_SKIP_BENCH=1 skip steps 7 / 8;
# FERRY_FUZZ_SECONDS sets the time per fuzz target (default 10; two targets
# run at a time).
# Any failing command prints the line and the command (ci_fail_trap).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=ci/lib/packages.sh
. ci/lib/packages.sh
ci_fail_trap ci/test.sh

# Each step's wall time, printed as it ends and as a table at the end (the
# 45-minute budget of the README is watched from these).
step_names=() step_secs=() step_start=$SECONDS
step_end() {
  if [ ${#step_names[@]} -gt 0 ]; then
    local i=$((${#step_names[@]} - 1))
    step_secs[i]=$((SECONDS - step_start))
    printf '=== (%s: %d s)\n' "${step_names[i]}" "${step_secs[i]}"
  fi
  step_start=$SECONDS
}
step() { step_end; step_names+=("$*"); printf '\n=== %s\n' "$*"; }
step_table() {
  step_end
  printf '\n%8s  %s\n' seconds step
  local i
  for i in "${!step_names[@]}"; do printf '%8d  %s\n' "${step_secs[i]}" "${step_names[i]}"; done
  printf '%8d  total\n' "$SECONDS"
}

step "package checks are safe on a fresh machine"
bash ci/packages-selftest.sh

step "toolchain and system packages"
# Default cargo features need nothing but Rust. The tests also run ranks
# under MPICH's Hydra (mpiexec.hydra), and build the network devices, whose
# bindings need the C libraries' headers and libclang (bindgen).
for tool in cargo rustfmt cargo-clippy; do
  command -v "$tool" >/dev/null || { echo "missing $tool: install it with rustup" >&2; exit 1; }
done
cargo --version
# util-linux: setpriv, which the attack tests (tests/security.rs) use to
# run a process of another user.
ci_packages_ensure mpich pkg-config clang libclang-dev libfabric-dev libfabric-bin \
  libibverbs-dev librdmacm-dev util-linux

# The release profile links with fat LTO (Cargo.toml) for the programs users
# run; the release-built *tests* below do not need it, and would spend
# minutes in it. The README's main command is built as users get it.
export CARGO_PROFILE_RELEASE_LTO=false
# Every build here starts from nothing on CI's fresh machine: incremental
# compilation only adds work to a cold build, and full debug info in the
# debug test binaries costs link time and disk (a cold `cargo test
# --no-run` of the workspace: 90 s and 3.5 GB with it, 74 s and 2.0 GB
# with line tables, which still give a panic's backtrace its lines).
export CARGO_INCREMENTAL=0
export CARGO_PROFILE_DEV_DEBUG=line-tables-only
# The same for the release-built tests, CI's longest single build (2 min
# 46 s cold on a fresh machine with the release profile's debug = 1), and
# for the benches' profile, so the bench smoke run reuses those builds.
export CARGO_PROFILE_RELEASE_DEBUG=line-tables-only
export CARGO_PROFILE_BENCH_DEBUG=line-tables-only

step "format"
cargo fmt --all -- --check

step "clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
# The code behind the features (ferry's ofi/verbs/mixed wiring, the feature
# test instantiations) is only compiled with them; the device crates' own
# tests too. One lint of all of it here: ci/ofi.sh and ci/verbs.sh skip
# theirs (FERRY_OFI_SKIP_CLIPPY, FERRY_VERBS_SKIP_CLIPPY below).
cargo clippy -p ferry -p ferry-tests -p ferry-bench -p ferry-ofi -p ferry-verbs \
  --features ferry/ofi,ferry/verbs,ferry-tests/ofi,ferry-tests/verbs,ferry-bench/ofi,ferry-bench/verbs \
  --all-targets --locked -- -D warnings
# And without any device: the stub modules, and the typed errors they return.
cargo clippy -p ferry --no-default-features --all-targets --locked -- -D warnings

step "rustdoc (-D warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked

# The device crates' own tests run in their scripts below: ferry-ofi's need
# libfabric's providers, ferry-verbs' an RDMA device (the VM's).
network=(--exclude ferry-ofi --exclude ferry-verbs)

step "tests"
cargo test --workspace "${network[@]}" --locked
# The API without any device compiled in: typed errors from the stubs.
cargo test -p ferry --no-default-features --locked

step "loom model check of the shm queue"
# A separate target dir: the cfg flag would otherwise rebuild everything.
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/loom" \
  cargo test -p ferry-shm --release --locked --lib loom

step "stress tests (ignored by default)"
# Only the test targets that hold #[ignore]d tests are built in release: the
# whole workspace's took 182 s cold, these 95 s. A target that gains one and
# is not listed here fails the step instead of going unrun.
ignored_targets=(
  "benches/tests/coll_alloc.rs ferry-bench"
  "core/tests/sim_ordering.rs ferry-core"
  "shm/tests/multiprocess.rs ferry-shm"
  "tests/tests/api_multiproc.rs ferry-tests"
  "tests/tests/stress.rs ferry-tests"
)
listed=$(printf '%s\n' "${ignored_targets[@]}" | awk '{print $1}' | sort)
# The device crates' ignored tests (the verbs device's) run in ci/verbs.sh.
found=$(grep -rl --include='*.rs' -E '^\s*#\[ignore' benches core devices launch mpi pmi shm tests | sort)
if [ "$found" != "$listed" ]; then
  echo "ci/test.sh: the files with #[ignore]d tests changed; update ignored_targets:" >&2
  diff <(echo "$listed") <(echo "$found") >&2 || true
  exit 1
fi
stress_args=()
for t in "${ignored_targets[@]}"; do
  read -r file pkg <<<"$t"
  stress_args+=(-p "$pkg" --test "$(basename "$file" .rs)")
done
cargo test --locked --release "${stress_args[@]}" -- --ignored

step "the README's main job, built as users build it (fat LTO)"
env -u CARGO_PROFILE_RELEASE_DEBUG CARGO_PROFILE_RELEASE_LTO=fat CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/lto" \
  cargo run --release --locked -p ferry-bench -- latency --sizes 8,65536 --iters 2000

step "MPI ABI library (libmpi_abi.so.1): C tests through mpiexec and mpiexec.hydra"
bash ci/mpi-test.sh

step "mpi4py 4.1 built from its sdist with ferry's mpicc: import, a 4-rank program, its own test suite on 1, 2 and 4 ranks"
bash ci/mpi4py-test.sh

step "MPICH 4.0.2's own one-sided tests (test/mpi/rma), unmodified, on ferry's libmpi_abi.so.1"
bash ci/mpich-testsuite.sh "${CARGO_TARGET_DIR:-target}/mpich-testsuite" rma

step "well-known MPI programs built unmodified with ferry's mpicc: HPC Challenge (4 ranks) and NetPIPE (2 ranks), their own validation"
bash ci/programs.sh

step "ofi device: tcp;ofi_rxm and shm providers"
FERRY_OFI_SKIP_CLIPPY=1 bash ci/ofi.sh

step "MPI ABI library on the ofi device: C tests on 2 and 4 ranks (tcp;ofi_rxm)"
FERRY_MPI_TEST_OFI=only bash ci/mpi-test.sh

step "mixed devices: shm inside a node, ofi (tcp;ofi_rxm) across, one engine"
# FERRY_RANKS_PER_NODE=2 splits this machine into two nodes of 2 ranks.
cargo test -p ferry-tests --features ofi --locked --test mixed

step "two hosts (namespaces), launched by Hydra over ssh: ferry-info, the conformance suite, a bench (ci/cluster.sh)"
bash ci/cluster.sh

step "Slurm: srun --mpi=pmi2 (PMI-2) on a one-node cluster, conformance suite on 4 ranks, ferry-bench latency"
bash ci/slurm.sh

step "verbs device: Soft-RoCE in a QEMU VM"
FERRY_VERBS_SKIP_CLIPPY=1 bash ci/verbs.sh

if [ "${FERRY_CI_SKIP_FUZZ:-0}" != 1 ]; then
  step "fuzz smoke run (every decoder of peer-supplied bytes)"
  bash ci/fuzz.sh
fi

if [ "${FERRY_CI_SKIP_BENCH:-0}" != 1 ]; then
  step "bench smoke run"
  # Criterion's --test runs each benchmark once: they build and run, which
  # is what a smoke run is for (the measurements are ci/compare.sh's and
  # benches/instr's).
  cargo bench -p ferry-bench --locked --bench engine --bench shm_queue --bench sim_protocol --bench reduce -- --test
fi

step_table
printf '\n=== ci/test.sh passed\n'
