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
#   5. the fault tests (a rank killed mid-transfer: errors, not hangs).
#
# Called by ci/test.sh; honours CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n=== %s\n' "$*"; }

step "system packages"
packages=()
dpkg -s libfabric-dev >/dev/null 2>&1 || packages+=(libfabric-dev)
command -v fi_info >/dev/null || packages+=(libfabric-bin)
command -v clang >/dev/null || packages+=(clang)
dpkg -s libclang-dev >/dev/null 2>&1 || packages+=(libclang-dev)
command -v pkg-config >/dev/null || packages+=(pkg-config)
command -v mpiexec.hydra >/dev/null || packages+=(mpich)
if [ "${#packages[@]}" -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}"
fi
echo "libfabric $(pkg-config --modversion libfabric)"

step "providers"
fi_info -l | grep -E '^(tcp|ofi_rxm|shm):' 
fi_info -p 'tcp;ofi_rxm' -t FI_EP_RDM >/dev/null
fi_info -p shm -t FI_EP_RDM >/dev/null

step "format and clippy (ferry-ofi, ofi tests)"
cargo fmt -p ferry-ofi -- --check
rustfmt --edition 2021 --check tests/tests/conformance_ofi.rs tests/tests/failure_ofi.rs
cargo clippy -p ferry-ofi --all-targets --locked -- -D warnings
cargo clippy -p ferry-tests --features ofi --all-targets --locked -- -D warnings

step "ferry-ofi tests (tcp;ofi_rxm and shm)"
cargo test -p ferry-ofi --locked

step "conformance suite over ofi (ferryrun and mpiexec.hydra)"
cargo test -p ferry-tests --features ofi --locked --test conformance_ofi

step "fault tests over ofi"
cargo test -p ferry-tests --features ofi --locked --test failure_ofi
