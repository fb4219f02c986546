#!/usr/bin/env bash
# ci/mpi-install.sh PREFIX — builds ferry-mpi and ferryrun (release) and lays
# out an MPI prefix:
#   PREFIX/bin      mpicc mpicxx mpiexec mpirun ferryrun
#   PREFIX/include  mpi.h
#   PREFIX/lib      libmpi_abi.so.1, libmpi_abi.so -> libmpi_abi.so.1,
#                   pkgconfig/mpi.pc and pkgconfig/ferry-mpi.pc
# Then: PREFIX/bin/mpicc hello.c && PREFIX/bin/mpiexec -n 4 ./a.out
#
# Needs Rust (cargo) and a C compiler for mpicc: gcc and libc6-dev are
# installed with apt-get (through ci/lib/packages.sh) when missing.
# Env: CARGO_TARGET_DIR as cargo reads it; FERRY_MPI_FEATURES (e.g. "ofi")
# passed to `cargo build -p ferry-mpi --features`.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=ci/lib/packages.sh
. ci/lib/packages.sh
ci_fail_trap ci/mpi-install.sh

[ $# -eq 1 ] || { echo "usage: ci/mpi-install.sh PREFIX" >&2; exit 2; }
mkdir -p "$1"
prefix=$(cd "$1" && pwd)

command -v cargo >/dev/null || { echo "mpi-install: cargo is missing: install Rust with rustup" >&2; exit 1; }

# mpicc runs a C compiler; the tests and users need one with libc's headers.
if command -v dpkg-query >/dev/null 2>&1; then
  ci_packages_ensure gcc libc6-dev || {
    echo "mpi-install: mpicc needs a C compiler and libc headers, and installing gcc and libc6-dev failed (see above)" >&2
    exit 1
  }
elif ! command -v cc >/dev/null 2>&1; then
  echo "mpi-install: mpicc needs a C compiler: none is on PATH and this is not a Debian machine; install gcc" >&2
  exit 1
fi

features=()
[ -z "${FERRY_MPI_FEATURES:-}" ] || features=(--features "$FERRY_MPI_FEATURES")
echo "[mpi-install] cargo build --release -p ferry-mpi -p ferry-launch ${features[*]}" >&2
cargo build --release --locked -p ferry-mpi -p ferry-launch "${features[@]}"
target="${CARGO_TARGET_DIR:-target}/release"

mkdir -p "$prefix/bin" "$prefix/include" "$prefix/lib/pkgconfig"
install -m 0755 "$target/libmpi_abi.so" "$prefix/lib/libmpi_abi.so.1"
ln -sf libmpi_abi.so.1 "$prefix/lib/libmpi_abi.so"
install -m 0644 mpi/include/mpi.h "$prefix/include/mpi.h"
install -m 0755 "$target/ferryrun" "$prefix/bin/ferryrun"

# The wrappers know their prefix (a '|' in it would break sed's command).
case $prefix in *'|'*) echo "mpi-install: the prefix must not contain '|'" >&2; exit 2 ;; esac
subst() { sed "s|@PREFIX@|$prefix|g" "$1" >"$2"; chmod "$3" "$2"; }
subst mpi/bin/mpicc.in "$prefix/bin/mpicc" 0755
subst mpi/bin/mpicxx.in "$prefix/bin/mpicxx" 0755
subst mpi/bin/mpiexec.in "$prefix/bin/mpiexec" 0755
ln -sf mpiexec "$prefix/bin/mpirun"
subst mpi/bin/mpi.pc.in "$prefix/lib/pkgconfig/ferry-mpi.pc" 0644
subst mpi/bin/mpi.pc.in "$prefix/lib/pkgconfig/mpi.pc" 0644

# A check that the prefix works: a program built with its mpicc runs.
check=$(mktemp -d)
trap 'rm -rf "$check"' EXIT
cat >"$check/hello.c" <<'C'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int rank, size;
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) printf("ferry-mpi prefix works: %d ranks\n", size);
    return MPI_Finalize();
}
C
"$prefix/bin/mpicc" -o "$check/hello" "$check/hello.c"
"$prefix/bin/mpiexec" -n 2 --timeout 60 "$check/hello"
echo "[mpi-install] installed into $prefix" >&2
