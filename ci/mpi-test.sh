#!/usr/bin/env bash
# ci/mpi-test.sh — ferry-mpi's C tests: installs a prefix into a temporary
# directory (ci/mpi-install.sh), builds every mpi/tests/*.c with the
# installed mpicc, and runs each through the installed mpiexec (ferryrun,
# shm) on 1, 2, 3, 4 and 8 ranks (a singleton, the powers of two, odd
# counts; 5, 6 and 7 added nothing the others miss and cost minutes of
# ci/test.sh), then through mpiexec.hydra on 4 ranks (MPICH is
# installed if missing, as ci/test.sh does). fatal.c must fail, with a
# message naming the call and the error class.
# Env: FERRY_MPI_TEST_RANKS (default "1 2 3 4 8").
#      FERRY_MPI_TEST_OFI=1 builds the library with the ofi feature
#      (libfabric-dev, clang and libclang-dev installed if missing) and also
#      runs every test on the ofi device (FERRY_DEVICE=ofi, libfabric's
#      tcp;ofi_rxm provider) on FERRY_MPI_TEST_OFI_RANKS (default "2 4")
#      ranks; FERRY_MPI_TEST_OFI=only runs those ofi runs alone (no shm, no
#      Hydra), as ci/test.sh's ofi part does.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=ci/lib/packages.sh
. ci/lib/packages.sh
ci_fail_trap ci/mpi-test.sh

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
ofi=${FERRY_MPI_TEST_OFI:-0}
case $ofi in 0|1|only) ;; *) echo "mpi-test: FERRY_MPI_TEST_OFI must be 0, 1 or only, not '$ofi'" >&2; exit 2 ;; esac
if [ "$ofi" != 0 ]; then
  ci_packages_ensure libfabric-dev libfabric-bin clang libclang-dev pkg-config || {
    echo "mpi-test: the ofi runs need libfabric-dev, libfabric-bin, clang and libclang-dev; installing them failed" >&2
    exit 1
  }
  fi_info -p 'tcp;ofi_rxm' -t FI_EP_RDM >/dev/null || {
    echo "mpi-test: libfabric offers no tcp;ofi_rxm RDM endpoint here (fi_info -p 'tcp;ofi_rxm' failed)" >&2
    exit 1
  }
  export FERRY_MPI_FEATURES=${FERRY_MPI_FEATURES:+$FERRY_MPI_FEATURES,}ofi
fi
bash ci/mpi-install.sh "$prefix"

# Every function mpi.h declares is exported by the library, as MPI_X and
# PMPI_X (a declared function that is missing would fail only at link time
# in some program).
declared=$(grep -oE '^(int|double|MPI_Aint) P?MPIX?_[A-Za-z0-9_]+\(' mpi/include/mpi.h | sed -E 's/^[A-Za-z_]+ //; s/\($//' | sort -u)
exported=$(nm -D --defined-only "$prefix/lib/libmpi_abi.so.1" | awk '{print $3}' | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
if [ -n "$missing" ]; then
  echo "mpi-test: declared in mpi.h but not exported:" $missing >&2
  exit 1
fi
echo "ok   every one of $(echo "$declared" | wc -l) functions mpi.h declares is exported"

# mpiexec reads MPIEXEC_TIMEOUT (as Hydra does; MPICH's test harness sets it).
start=$(date +%s)
rc=0; MPIEXEC_TIMEOUT=2 "$prefix/bin/mpiexec" -n 1 sleep 60 >/dev/null 2>&1 || rc=$?
if [ "$rc" -ne 124 ] || [ $(( $(date +%s) - start )) -gt 30 ]; then
  echo "mpi-test: MPIEXEC_TIMEOUT=2 did not end a 60 s job with exit 124 (exit $rc)" >&2
  exit 1
fi
echo "ok   MPIEXEC_TIMEOUT ends a job that outlives it (exit 124)"

tests=()
for src in mpi/tests/*.c; do
  name=$(basename "$src" .c)
  "$prefix/bin/mpicc" -Wall -Wextra -Werror -pthread -o "$work/$name" "$src"
  [ "$name" = fatal ] || tests+=("$name")
done

failed=0
run() { # LABEL COMMAND...
  local label=$1 out; shift
  if out=$("$@" 2>&1) && grep -q '^PASS ' <<<"$out"; then
    echo "ok   $label"
  else
    echo "FAIL $label"; echo "$out" | tail -20; failed=$((failed + 1))
  fi
}
expect_fatal() { # LABEL COMMAND...
  local label=$1 out; shift
  if out=$("$@" 2>&1); then
    echo "FAIL $label: the job succeeded"; failed=$((failed + 1))
  elif grep -q 'MPI_Send failed: MPI_ERR_RANK' <<<"$out" && ! grep -q UNREACHABLE <<<"$out"; then
    echo "ok   $label (failed as it must)"
  else
    echo "FAIL $label"; echo "$out" | tail -20; failed=$((failed + 1))
  fi
}

if [ "$ofi" != only ]; then
  for n in ${FERRY_MPI_TEST_RANKS:-1 2 3 4 8}; do
    for t in "${tests[@]}"; do
      run "mpiexec -n $n $t" "$prefix/bin/mpiexec" -n "$n" --timeout 120 "$work/$t"
    done
    expect_fatal "mpiexec -n $n fatal" "$prefix/bin/mpiexec" -n "$n" --timeout 120 "$work/fatal"
  done

  ci_packages_ensure mpich || { echo "mpi-test: cannot install MPICH for mpiexec.hydra" >&2; exit 1; }
  for t in "${tests[@]}"; do
    run "mpiexec.hydra -n 4 $t" env MPIEXEC_TIMEOUT=120 mpiexec.hydra -n 4 "$work/$t"
  done
  expect_fatal "mpiexec.hydra -n 4 fatal" env MPIEXEC_TIMEOUT=120 mpiexec.hydra -n 4 "$work/fatal"
fi

if [ "$ofi" != 0 ]; then
  ofienv=(env FERRY_DEVICE=ofi FERRY_OFI_PROVIDER="tcp;ofi_rxm")
  for n in ${FERRY_MPI_TEST_OFI_RANKS:-2 4}; do
    for t in "${tests[@]}"; do
      run "ofi (tcp;ofi_rxm) mpiexec -n $n $t" "${ofienv[@]}" "$prefix/bin/mpiexec" -n "$n" --timeout 180 "$work/$t"
    done
    expect_fatal "ofi (tcp;ofi_rxm) mpiexec -n $n fatal" "${ofienv[@]}" "$prefix/bin/mpiexec" -n "$n" --timeout 180 "$work/fatal"
  done
fi

if [ "$failed" -gt 0 ]; then
  echo "mpi-test: $failed run(s) failed" >&2
  exit 1
fi
echo "mpi-test: all passed"
