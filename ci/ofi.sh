#!/usr/bin/env bash
# ci/ofi.sh — the libfabric (ofi) device's checks, runnable by a person.
#
# Installs what the `ofi` feature needs (libfabric-dev, clang/libclang-dev
# for bindgen, pkg-config, libfabric-bin for fi_info, mpich for Hydra),
# then runs, in order:
#   1. the providers this machine offers (tcp;ofi_rxm and shm must be there);
#   2. rustfmt and clippy (-D warnings) on ferry-ofi and the ofi test files;
#   3. ferry-ofi's own tests (in-process devices and engines over
#      tcp;ofi_rxm and shm, real libfabric);
#   4. the conformance suite over FERRY_DEVICE=ofi on tcp;ofi_rxm, shm and
#      tcp without RMA, through ferryrun and mpiexec.hydra;
#   5. the fault tests (a rank killed mid-transfer: errors, not hangs);
#   6. the attack on the liveness sockets (tests/security.rs: an intruder
#      on every listener of a starting job; SECURITY.md).
#
# Called by ci/test.sh (which lints everything once, and sets
# FERRY_OFI_SKIP_CLIPPY=1 to skip step 2); honours CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=ci/lib/packages.sh
. ci/lib/packages.sh
ci_fail_trap ci/ofi.sh

step() { printf '\n=== %s\n' "$*"; }

step "system packages"
ci_packages_ensure libfabric-dev libfabric-bin clang libclang-dev pkg-config mpich
echo "libfabric $(pkg-config --modversion libfabric)"

step "providers"
fi_info -l | grep -E '^(tcp|ofi_rxm|shm):' 
fi_info -p 'tcp;ofi_rxm' -t FI_EP_RDM >/dev/null
fi_info -p shm -t FI_EP_RDM >/dev/null

if [ "${FERRY_OFI_SKIP_CLIPPY:-0}" != 1 ]; then
  step "format and clippy (ferry-ofi, ofi tests)"
  cargo fmt -p ferry-ofi -- --check
  rustfmt --edition 2021 --check tests/tests/conformance_ofi.rs tests/tests/failure_ofi.rs tests/tests/security.rs
  cargo clippy -p ferry-ofi --all-targets --locked -- -D warnings
  cargo clippy -p ferry-tests --features ofi --all-targets --locked -- -D warnings
fi

step "ferry-ofi tests (tcp;ofi_rxm and shm)"
cargo test -p ferry-ofi --locked

step "conformance suite over ofi (ferryrun and mpiexec.hydra)"
cargo test -p ferry-tests --features ofi --locked --test conformance_ofi

step "fault tests over ofi"
cargo test -p ferry-tests --features ofi --locked --test failure_ofi

step "attack on the liveness sockets (and the shm wake channel again)"
cargo test -p ferry-tests --features ofi --locked --test security
