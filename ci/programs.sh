#!/usr/bin/env bash
# ci/programs.sh — two well-known MPI programs, built unmodified from
# Debian's source packages with ferry's mpicc and run with ferry's mpiexec,
# each judged by its own validation:
#   1. installs a ferry prefix (ci/mpi-install.sh), unless FERRY_MPI_PREFIX
#      names one that exists;
#   2. fetches Debian's hpcc (1.5.0-3) and netpipe (3.7.2-8) source packages
#      with `apt-get source` (ci_apt_source: deb-src entries derived from the
#      machine's own apt sources) and checks each upstream tarball against
#      its SHA-256 (the one the .dsc names); only those tarballs are built
#      (a mirror that serves them but not Debian's debian.tar.xz, as this
#      machine's does, is enough);
#   3. HPC Challenge 1.5.0: writes hpl/Make.ferry, the build script HPCC asks
#      for (CC and LINKER the prefix's mpicc, BLAS from ATLAS through its C
#      interface, as Debian's build does: libatlas-base-dev, HPL_CALL_CBLAS;
#      and HPL's HPL_COPY_L option, see below), builds it and runs it on 4
#      ranks (P x Q = 2 x 2, HPL's N = 2000, NB = 80): HPL, PTRANS,
#      RandomAccess (MPI, star and single, both generators), DGEMM, STREAM,
#      FFT (MPI, star and single) and the ping-pong and ring
#      latency/bandwidth tests. Each test's own check is
#      read back from hpccoutf.txt: HPL's and PTRANS' residual checks,
#      RandomAccess's error counts, DGEMM's and FFT's scaled residuals,
#      STREAM's "Solution Validates", every "Node(s) with error" count, and
#      the Summary section's Success=1;
#   4. NetPIPE 3.7.2: builds NPmpi (its makefile's `mpi` target) and runs it
#      on 2 ranks up to 1 MiB, first with -i (NetPIPE's integrity check: each
#      size's data verified on arrival), then to measure (-o np.out), whose
#      numbers are checked for sanity.
# A failure names the program and the test; both programs run even if the
# first fails. Compiler and linker errors about MPI names (functions or
# constants that ferry's mpi.h or libmpi_abi.so.1 lack) are listed.
#
# Usage: ci/programs.sh [OUT_DIR]   (default OUT_DIR target/programs)
# Env: FERRY_MPI_PREFIX=DIR uses that ferry prefix instead of installing one
# in OUT_DIR/prefix. About 1 min 30 s here with a prefix given (2 vCPUs;
# 1 min 29 s measured, 1 min 37 s on a fresh machine): fetching and building
# about 30 s, HPCC's run 7 s, NetPIPE's integrity run 5 s and measured run
# 48 s.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=ci/lib/packages.sh
. "$root/ci/lib/packages.sh"
ci_fail_trap ci/programs.sh
out=${1:-$root/target/programs}
mkdir -p "$out"
out=$(cd "$out" && pwd)

ci_packages_ensure dpkg-dev make gcc libc6-dev libatlas-base-dev || {
  echo "programs: could not install dpkg-dev (apt-get source), make, gcc, libc6-dev and libatlas-base-dev (HPL's BLAS, as Debian builds hpcc) (see above)" >&2
  exit 1
}

# fetch PKG TARBALL SHA256: TARBALL (an upstream .orig tarball) in $out,
# from `apt-get source PKG` unless it is there already with that SHA-256.
fetch() {
  local pkg=$1 tarball=$out/$2 sha=$3
  echo "$sha  $tarball" | sha256sum -c --status 2>/dev/null && return 0
  echo "[programs] apt-get source $pkg"
  if ! ci_apt_source "$pkg" "$out"; then
    # Only the upstream tarball is built: a mirror that has it (apt checked
    # it against the signed index) but not Debian's packaging is enough.
    echo "$sha  $tarball" | sha256sum -c --status 2>/dev/null || {
      echo "programs: could not fetch Debian's $pkg source package" >&2
      return 1
    }
    echo "[programs] $pkg: Debian's packaging was not fetched, but ${tarball##*/}, the only part built here, was"
  fi
  echo "$sha  $tarball" | sha256sum -c --status || {
    echo "programs: $tarball is missing or does not have the expected SHA-256 ($sha)" >&2
    return 1
  }
}
fetch hpcc hpcc_1.5.0.orig.tar.gz 0a6fef7ab9f3347e549fed65ebb98234feea9ee18aea0c8f59baefbe3cf7ffb8
fetch netpipe netpipe_3.7.2.orig.tar.gz 13dac884ff52951636f651c421f5ff4a853218a95aa28a4a852402ee385a2ab8

if [ -n "${FERRY_MPI_PREFIX:-}" ]; then
  [ -x "$FERRY_MPI_PREFIX/bin/mpicc" ] || {
    echo "programs: FERRY_MPI_PREFIX=$FERRY_MPI_PREFIX has no bin/mpicc (make one with ci/mpi-install.sh PREFIX)" >&2
    exit 1
  }
  prefix=$(cd "$FERRY_MPI_PREFIX" && pwd)
else
  prefix="$out/prefix"
  echo "[programs] installing a ferry prefix in $prefix (ci/mpi-install.sh)"
  bash "$root/ci/mpi-install.sh" "$prefix" >"$out/install.log" 2>&1 || {
    echo "programs: ci/mpi-install.sh failed:" >&2; tail -20 "$out/install.log" >&2; exit 1
  }
fi
mpicc="$prefix/bin/mpicc"
mpiexec="$prefix/bin/mpiexec"

# mpi_names LOG: the MPI functions and constants a compiler or linker log
# says are missing (implicit declarations, undeclared names, undefined
# references), one a line.
mpi_names() {
  local q="(‘|'|\`)" name='[PQ]?MPIX?_[A-Za-z0-9_]+'
  grep -oE "(implicit declaration of function|undefined reference to|unknown type name) $q$name|$q$name(’|') undeclared" "$1" \
    | grep -oE "$name" | sort -u || true
}

# build_failed NAME LOG: says why a build failed, naming the missing MPI
# names if that is why.
build_failed() {
  local names
  names=$(mpi_names "$2")
  if [ -n "$names" ]; then
    echo "programs: $1 did not build: MPI names that ferry's mpi.h / libmpi_abi.so.1 lack: $(echo "$names" | tr '\n' ' ')" >&2
  else
    echo "programs: $1 did not build:" >&2
  fi
  grep -E "error|undefined reference" "$2" | head -20 >&2 || true
}

# links_ferry BINARY: the binary loads the prefix's libmpi_abi.so.1 and no
# other MPI library (Open MPI's or MPICH's, which Debian may have installed).
links_ferry() {
  local libs
  libs=$(ldd "$1")
  echo "$libs" | grep -qF "$prefix/lib/libmpi_abi.so.1" || {
    echo "programs: $1 does not load $prefix/lib/libmpi_abi.so.1:" >&2; echo "$libs" >&2; return 1
  }
  if echo "$libs" | grep -E 'libmpi(ch)?\.so|libmpich|libopen-(rte|pal)'; then
    echo "programs: $1 loads another MPI library (above)" >&2
    return 1
  fi
}

# ---------------------------------------------------------------- HPCC
hpcc() {
  local src=$out/hpcc-1.5.0 run=$out/hpcc-run
  rm -rf "$src" "$run"
  tar -C "$out" -xzf "$out/hpcc_1.5.0.orig.tar.gz" || { echo "programs: could not unpack hpcc_1.5.0.orig.tar.gz" >&2; return 1; }
  # HPCC builds from a Make.<arch> the user writes in hpl/ (README.txt,
  # "Compiling"); TOPdir is ../../.. for HPCC. The flags are those of
  # Debian's build (HPL_CALL_CBLAS, -fomit-frame-pointer -O3
  # -funroll-loops), with ATLAS's CBLAS named directly.
  # HPL_COPY_L is HPL's documented compile option (hpl/INSTALL) to copy a
  # panel into a contiguous buffer (an MPI_Type_contiguous) before it is
  # broadcast. Without it HPL describes the panel in place with MPI_Address
  # and MPI_Type_struct, MPI-1 functions deleted in MPI-3.0, which the MPI-5
  # ABI, and so libmpi_abi.so.1, does not have (Open MPI 4 and later do not
  # either); HPCC 1.5.0 then does not link.
  cat >"$src/hpl/Make.ferry" <<EOF
# Written by ci/programs.sh: HPCC built with ferry's mpicc.
SHELL        = /bin/sh
CD           = cd
CP           = cp
LN_S         = ln -s
MKDIR        = mkdir -p
RM           = /bin/rm -f
TOUCH        = touch
ARCH         = \$(arch)
TOPdir       = ../../..
INCdir       = \$(TOPdir)/include
BINdir       = \$(TOPdir)/bin/\$(ARCH)
LIBdir       = \$(TOPdir)/lib/\$(ARCH)
HPLlib       = \$(LIBdir)/libhpl.a
LAlib        = -lcblas -latlas
HPL_INCLUDES = -I\$(INCdir) -I\$(INCdir)/\$(ARCH)
HPL_LIBS     = \$(HPLlib) \$(LAlib) -lm
HPL_OPTS     = -DHPL_CALL_CBLAS -DHPL_COPY_L
HPL_DEFS     = \$(HPL_OPTS) \$(HPL_INCLUDES)
CC           = $mpicc
CCNOOPT      = \$(HPL_DEFS)
CCFLAGS      = \$(HPL_DEFS) -fomit-frame-pointer -O3 -funroll-loops
LINKER       = $mpicc
LINKFLAGS    = \$(CCFLAGS)
ARCHIVER     = ar
ARFLAGS      = r
RANLIB       = ranlib
EOF
  echo "[programs] HPCC 1.5.0: building with $mpicc"
  if ! { make -C "$src" -j2 arch=ferry >"$out/hpcc-build.log" 2>&1 && [ -x "$src/hpcc" ]; }; then
    build_failed "HPCC 1.5.0" "$out/hpcc-build.log"; return 1
  fi
  local names
  names=$(mpi_names "$out/hpcc-build.log")
  [ -z "$names" ] || echo "[programs] HPCC built, but the compiler saw undeclared MPI names: $names"
  links_ferry "$src/hpcc" || return 1

  # hpccinf.txt is HPL's input file with PTRANS' lines after it (HPCC's
  # _hpccinf.txt with N = 2000): the sizes of the other tests follow from
  # HPL's N.
  mkdir -p "$run"
  cat >"$run/hpccinf.txt" <<'EOF'
HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
2000         Ns
1            # of NBs
80           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
2            Ps
2            Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                      		Number of additional problem sizes for PTRANS
1200 10000 30000        	values of N
0                       	number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64       	values of NB
EOF
  echo "[programs] HPCC 1.5.0: running on 4 ranks (HPL N=2000 NB=80, P x Q = 2 x 2)"
  local t0=$SECONDS status=0
  # HPCC reads hpccinf.txt from, and writes hpccoutf.txt to, its directory.
  (cd "$run" && "$mpiexec" -n 4 --timeout 300 "$src/hpcc") >"$out/hpcc-run.log" 2>&1 || status=$?
  local f="$run/hpccoutf.txt"
  cp "$f" "$out/hpccoutf.txt" 2>/dev/null || true
  if [ $status != 0 ]; then
    echo "programs: HPCC exited with status $status after $((SECONDS - t0)) s:" >&2
    tail -20 "$out/hpcc-run.log" >&2
    [ ! -f "$f" ] || { echo "  last lines of hpccoutf.txt:" >&2; tail -10 "$f" >&2; }
    return 1
  fi
  echo "[programs] HPCC ran in $((SECONDS - t0)) s; checking hpccoutf.txt ($out/hpccoutf.txt)"
  hpcc_check "$f"
}

# section FILE NAME: the lines of HPCC's "Begin of NAME section." to its end.
section() {
  awk -v b="Begin of $2 section." -v e="End of $2 section." '$0 == b { on = 1 } on { print } $0 == e { on = 0 }' "$1"
}

# summary FILE KEY: the value of KEY=... in the Summary section.
summary() {
  section "$1" Summary | awk -F= -v k="$2" '$1 == k { print $2; exit }'
}

# hpcc_check FILE: each test's own verdict in hpccoutf.txt; every failing
# test is named.
hpcc_check() {
  local f=$1 failed=() s text thrsh eps
  # HPL's residual threshold (hpccinf.txt line 13) and eps, as HPCC uses them.
  thrsh=16.0
  eps=$(summary "$f" dweps)
  for s in HPL PTRANS MPIRandomAccess StarRandomAccess SingleRandomAccess \
      MPIRandomAccess_LCG StarRandomAccess_LCG SingleRandomAccess_LCG StarDGEMM SingleDGEMM \
      StarSTREAM SingleSTREAM MPIFFT StarFFT SingleFFT LatencyBandwidth; do
    text=$(section "$f" "$s")
    if ! grep -qx "End of $s section." <<<"$text"; then
      echo "  $s: FAILED: its section is missing or did not end" >&2; failed+=("$s"); continue
    fi
    local why=""
    # "Node(s) with error N": the ranks whose run of the test returned an error.
    if awk '/^Node\(s\) with error / && $4 != 0 { bad = 1 } END { exit !bad }' <<<"$text"; then
      why="$(grep '^Node(s) with error' <<<"$text" | tr '\n' ' ')(ranks whose run returned an error); "
    fi
    case $s in
      HPL|PTRANS)
        # HPL: "||Ax-b||... PASSED" and its test counts; PTRANS: a PASSED
        # line per run and the same counts.
        grep -q 'PASSED' <<<"$text" || why+="no PASSED residual check; "
        ! grep -q 'FAILED' <<<"$text" || why+="$(grep 'FAILED' <<<"$text" | head -3 | tr '\n' ' '); "
        grep -Eq '^ *0 tests completed and failed residual checks' <<<"$text" \
          || why+="$(grep -E 'completed and failed residual checks' <<<"$text" | tr -s ' '); "
        grep -Eq '^ *0 tests skipped because of illegal input values' <<<"$text" \
          || why+="$(grep -E 'skipped because of illegal input values' <<<"$text" | tr -s ' '); "
        ;;
      MPIRandomAccess|StarRandomAccess|MPIRandomAccess_LCG|StarRandomAccess_LCG)
        # "Found N errors in M locations (passed)." HPCC passes up to 1 %
        # errors; with a correct MPI there are none, and none is required.
        grep -Eq '^Found 0 errors in [0-9]+ locations \(passed\)\.$' <<<"$text" \
          || why+="$(grep '^Found' <<<"$text" || echo 'no "Found N errors" line'); "
        ;;
      StarDGEMM)
        # HPCC: the scaled residual of C = beta C + alpha A B below the threshold.
        awk -v t="$thrsh" '/^Scaled residual:/ { r = $3; seen = 1 } END { exit !(seen && r + 0 < t + 0) }' <<<"$text" \
          || why+="$(grep '^Scaled residual' <<<"$text" || echo 'no scaled residual'), threshold $thrsh; "
        ;;
      StarSTREAM)
        grep -q '^Solution Validates' <<<"$text" && ! grep -q 'Failed Validation' <<<"$text" \
          || why+="$(grep -E 'Validat' <<<"$text" | head -3 | tr '\n' ' '); "
        ;;
      MPIFFT|StarFFT)
        # HPCC: max|x - x0| / ln(n) / eps below the threshold, after a
        # forward and an inverse FFT.
        awk -v t="$thrsh" -v e="$eps" '/^Vector size:/ { n = $3 } /^max\(\|x-x0\|\):/ { m = $2; seen = 1 }
            END { exit !(seen && n > 1 && e > 0 && m / log(n) / e < t + 0) }' <<<"$text" \
          || why+="max(|x-x0|) = $(awk '/^max/ { print $2 }' <<<"$text") (eps $eps, threshold $thrsh); "
        ;;
      LatencyBandwidth)
        # No check of its own beyond finishing; its results must be numbers > 0.
        local k v
        for k in MaxPingPongLatency_usec MinPingPongBandwidth_GBytes RandomlyOrderedRingLatency_usec \
            NaturallyOrderedRingBandwidth_GBytes RandomlyOrderedRingBandwidth_GBytes; do
          v=$(summary "$f" "$k")
          awk -v v="$v" 'BEGIN { exit !(v + 0 > 0) }' || why+="$k=$v; "
        done
        ;;
    esac
    if [ -n "$why" ]; then
      echo "  $s: FAILED: $why" >&2; failed+=("$s")
    else
      echo "  $s: passed"
    fi
  done
  # HPCC's own verdict over all of them (params->Failure), which also
  # covers the star and single tests' checks on ranks other than 0.
  if [ "$(summary "$f" Success)" != 1 ]; then
    echo "  Summary: FAILED: Success=$(summary "$f" Success) (HPCC's overall verdict)" >&2; failed+=(Summary)
  elif [ "$(summary "$f" CommWorldProcs)" != 4 ]; then
    echo "  Summary: FAILED: CommWorldProcs=$(summary "$f" CommWorldProcs), not 4" >&2; failed+=(Summary)
  else
    echo "  Summary: Success=1"
  fi
  grep -q '^End of HPC Challenge tests\.$' "$f" || { echo "  HPCC did not reach its end" >&2; failed+=(end); }
  printf '[programs] HPCC: HPL %.2f Gflop/s (N=%s), PTRANS %s GB/s, MPIRandomAccess %s GUP/s, MPIFFT %s Gflop/s, StarSTREAM Triad %s GB/s,\n' \
    "$(awk -v t="$(summary "$f" HPL_Tflops)" 'BEGIN { print t * 1000 }')" "$(summary "$f" HPL_N)" \
    "$(summary "$f" PTRANS_GBs)" "$(summary "$f" MPIRandomAccess_GUPs)" "$(summary "$f" MPIFFT_Gflops)" \
    "$(summary "$f" StarSTREAM_Triad)"
  printf '[programs]   ping-pong latency max %s us, bandwidth min %s GB/s; ring bandwidth natural %s, random %s GB/s\n' \
    "$(summary "$f" MaxPingPongLatency_usec)" "$(summary "$f" MinPingPongBandwidth_GBytes)" \
    "$(summary "$f" NaturallyOrderedRingBandwidth_GBytes)" "$(summary "$f" RandomlyOrderedRingBandwidth_GBytes)"
  if [ ${#failed[@]} -gt 0 ]; then
    echo "programs: HPCC: failed: ${failed[*]} (see $out/hpccoutf.txt)" >&2
    return 1
  fi
}

# ---------------------------------------------------------------- NetPIPE
netpipe() {
  local src=$out/NetPIPE-3.7.2 upto=1048576
  rm -rf "$src"
  tar -C "$out" -xzf "$out/netpipe_3.7.2.orig.tar.gz" || { echo "programs: could not unpack netpipe_3.7.2.orig.tar.gz" >&2; return 1; }
  echo "[programs] NetPIPE 3.7.2: building NPmpi with $mpicc"
  if ! { make -C "$src" mpi MPICC="$mpicc" >"$out/netpipe-build.log" 2>&1 && [ -x "$src/NPmpi" ]; }; then
    build_failed "NetPIPE 3.7.2" "$out/netpipe-build.log"; return 1
  fi
  links_ferry "$src/NPmpi" || return 1

  # -i: NetPIPE fills each message with consecutive integers and checks
  # them on arrival (it exits non-zero on the first wrong one), at sizes
  # 5 B .. upto (powers of two and between, each +1).
  echo "[programs] NetPIPE: integrity check on 2 ranks up to $upto B (-i)"
  local status=0 t0=$SECONDS
  (cd "$src" && "$mpiexec" -n 2 --timeout 300 ./NPmpi -i -u $upto) >"$out/netpipe-integrity.log" 2>&1 || status=$?
  local passed
  passed=$(grep -c 'Integrity check passed' "$out/netpipe-integrity.log" || true)
  if [ $status != 0 ] || grep -q 'Integrity check failed' "$out/netpipe-integrity.log" || [ "$passed" -lt 20 ]; then
    echo "programs: NetPIPE integrity check failed (status $status, $passed sizes passed):" >&2
    tail -10 "$out/netpipe-integrity.log" >&2
    return 1
  fi
  echo "[programs] NetPIPE: integrity check passed at $passed sizes ($((SECONDS - t0)) s)"

  # The measured run: each size once (-p 0: without NetPIPE's +-3 B
  # perturbations, which triple the sizes and the run's 48 s here);
  # np.out has a line per size: bytes, Mbps, seconds per one-way transfer.
  echo "[programs] NetPIPE: measuring on 2 ranks up to $upto B"
  status=0 t0=$SECONDS
  rm -f "$src/np.out"
  (cd "$src" && "$mpiexec" -n 2 --timeout 300 ./NPmpi -p 0 -u $upto -o np.out) >"$out/netpipe-run.log" 2>&1 || status=$?
  cp "$src/np.out" "$out/np.out" 2>/dev/null || true
  if [ $status != 0 ] || [ ! -s "$src/np.out" ]; then
    echo "programs: NetPIPE's measured run failed (status $status) or wrote no np.out:" >&2
    tail -10 "$out/netpipe-run.log" >&2
    return 1
  fi
  # Sane: three numbers a line, sizes rising from 1 B to at least upto,
  # every rate and time > 0 and finite, at least one size per power of two.
  local sane
  sane=$(awk -v upto=$upto '
    NF != 3 || $1 !~ /^[0-9]+$/ || !($2 + 0 > 0) || !($3 + 0 > 0) || $2 + 0 > 1e9 || $3 + 0 > 10 { print "bad line " NR ": " $0; bad = 1; exit }
    NR > 1 && $1 + 0 <= last { print "sizes not rising at line " NR; bad = 1; exit }
    { last = $1 + 0; if (NR == 1) first = $1 + 0; n++ }
    END { if (bad) exit; if (n && first != 1) print "first size " first " B, not 1 B"; else if (last < upto) print "stopped at " last " B, below " upto " B"; else if (n < 21) print "only " n " sizes" }' "$src/np.out")
  if [ -n "$sane" ]; then
    echo "programs: NetPIPE's np.out is not sane: $sane" >&2
    return 1
  fi
  echo "[programs] NetPIPE: $(wc -l <"$src/np.out") sizes measured ($((SECONDS - t0)) s)"
  awk '{ if ($2 + 0 > peak) { peak = $2 + 0; at = $1 } } NR == 1 { lat = $3 * 1e6 }
    END { printf "[programs] NetPIPE: latency %.2f us (1 B), peak %.0f Mbps (%.2f GB/s) at %d B\n", lat, peak, peak / 8000, at }' "$src/np.out"
}

failed=()
hpcc || failed+=("HPC Challenge")
netpipe || failed+=("NetPIPE")
if [ ${#failed[@]} -gt 0 ]; then
  echo "programs: failed: ${failed[*]} (logs in $out)" >&2
  exit 1
fi
echo "programs: HPC Challenge 1.5.0 (4 ranks) and NetPIPE 3.7.2 (2 ranks) built unmodified with ferry's mpicc and passed their own checks"
