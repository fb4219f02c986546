#!/usr/bin/env bash
# ci/ofi-bench.sh — ferry over libfabric (FERRY_DEVICE=ofi, tcp;ofi_rxm)
# side by side with libfabric's and UCX's own tools, on this machine:
#   - 8 B latency: `ferry-bench latency` against `fi_pingpong -p "tcp;ofi_rxm"
#     -e rdm -m tagged` (target: ferry <= 1.15 x fi_pingpong);
#   - 1 MiB bandwidth: `ferry-bench bw` against `ucx_perftest -t tag_bw` with
#     UCX_TLS=tcp (target: ferry >= 1.0 x ucx_perftest); and osu_bw's loop
#     (benches/compare/src/mpi_bw.c) built with ferry's mpicc (an MPI prefix
#     with the ofi feature, ci/mpi-install.sh), which, like ucx_perftest,
#     receives every message of the window into one buffer (ferry-bench's
#     owned buffers are 64 distinct ones: 64 MiB of destination per window);
#     and the same loop on Open MPI's ofi MTL (--mca pml cm --mca mtl ofi) over
#     the same provider, so the provider's own ceiling is measured beside UCX.
# Every program runs as two processes pinned to cores 0 and 1 (taskset), after
# waiting for a quiet machine (benches/compare/wait_quiet.sh); the four runs
# alternate, REPS times (default 5), and the report takes medians. Writes
# docs/perf/ofi.md and the raw lines to docs/perf/raw/ofi/.
#
# Env: REPS (default 5); CARGO_TARGET_DIR is honoured.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=ci/lib/packages.sh
. ci/lib/packages.sh
ci_fail_trap ci/ofi-bench.sh
ROOT=$PWD
REPS=${REPS:-5}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
RAW=$ROOT/docs/perf/raw/ofi
OUT=$ROOT/docs/perf/ofi.md
QUIET=$ROOT/benches/compare/wait_quiet.sh
PROV='tcp;ofi_rxm'
FI_PORT=47593
UCX_PORT=13347

step() { printf '\n=== %s\n' "$*"; }

step "system packages"
ci_packages_ensure libfabric-bin ucx-utils libfabric-dev clang libclang-dev pkg-config \
  openmpi-bin libopenmpi-dev

step "build"
cargo build --release --locked -p ferry-bench --features ofi
cargo build --release --locked -p ferry-launch --bin ferryrun
FB=$TARGET/release/ferry-bench
FR=$TARGET/release/ferryrun
PREFIX=$TARGET/ofi-mpi-prefix
FERRY_MPI_FEATURES=ofi bash ci/mpi-install.sh "$PREFIX" >/dev/null
CLOOP=$TARGET/ofi-mpi_bw
"$PREFIX/bin/mpicc" -O2 -o "$CLOOP" benches/compare/src/mpi_bw.c
OMPI_LOOP=$TARGET/ofi-mpi_bw.ompi
mpicc.openmpi -O2 -o "$OMPI_LOOP" benches/compare/src/mpi_bw.c

mkdir -p "$RAW"
rm -f "$RAW"/*.txt
quiet() { "$QUIET" 2>>"$RAW/noise.txt" || true; }
PIN='exec taskset -c $PMI_RANK "$0" "$@"'

ferry_run() { # subcommand size -> the table line "size avg p50 ..."
  FERRY_OFI_PROVIDER=$PROV timeout 300 "$FR" -n 2 sh -c "$PIN" "$FB" "$1" \
    --device ofi --wait-mode spin --sizes "$2" 2>/dev/null | awk -v s="$2" '$1 == s'
}

fi_pp() { # size -> usec/xfer
  local args=(-p "$PROV" -e rdm -m tagged -I 20000 -S "$1")
  timeout 120 taskset -c 0 fi_pingpong "${args[@]}" -B "$FI_PORT" >/dev/null 2>&1 &
  local spid=$!
  sleep 0.5
  local line
  line=$(timeout 120 taskset -c 1 fi_pingpong "${args[@]}" -P "$FI_PORT" 127.0.0.1 2>/dev/null | tail -1)
  wait $spid || true
  # bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
  set -- $line
  echo "${7:-nan}"
}

cloop_bw() { # size -> MB/s (osu_bw's loop on ferry's MPI C ABI, one receive buffer)
  FERRY_DEVICE=ofi FERRY_OFI_PROVIDER=$PROV timeout 300 "$PREFIX/bin/mpiexec" -n 2 sh -c "$PIN" \
    "$CLOOP" "$1" 64 2>/dev/null | awk -v s="$1" '$1 == s {print $2}'
}

ompi_ofi_bw() { # size -> MB/s (the same loop on Open MPI's ofi MTL, same provider)
  timeout 300 mpirun --allow-run-as-root -np 2 --bind-to core --mca pml cm --mca mtl ofi \
    --mca mtl_ofi_provider_include "$PROV" "$OMPI_LOOP" "$1" 64 2>/dev/null \
    | awk -v s="$1" '$1 == s {print $2}'
}

ucx_bw() { # size -> MB/s (overall bandwidth, MiB/s converted to MB/s)
  UCX_TLS=tcp timeout 120 taskset -c 0 ucx_perftest -p "$UCX_PORT" -c 0 >/dev/null 2>&1 &
  local spid=$!
  sleep 1
  local line
  line=$(UCX_TLS=tcp timeout 120 taskset -c 1 ucx_perftest localhost -p "$UCX_PORT" \
    -t tag_bw -s "$1" -n 2000 -w 200 -c 1 -f -v 2>/dev/null | tail -1)
  wait $spid || true
  # iterations,p50_lat,avg_lat,overall_lat,avg_bw(MiB/s),overall_bw,avg_mr,overall_mr
  IFS=, read -r _ _ _ _ _ obw _ _ <<<"$line"
  awk -v b="${obw:-0}" 'BEGIN{printf "%.1f\n", b*1.048576}'
}

for rep in $(seq "$REPS"); do
  step "repetition $rep of $REPS"
  # Alternate the order so that drift in the machine's load hits both sides.
  if [ $((rep % 2)) = 1 ]; then order="ferry peer"; else order="peer ferry"; fi
  for who in $order; do
    quiet
    if [ $who = ferry ]; then
      l=$(ferry_run latency 8); echo "$l" | tee -a "$RAW/ferry-lat8.txt"
      quiet
      b=$(ferry_run bw 1048576); echo "$b" | tee -a "$RAW/ferry-bw1m.txt"
      quiet
      c=$(cloop_bw 1048576); echo "ferry C loop 1 MiB: $c MB/s"; echo "$c" >>"$RAW/ferry-cloop-bw1m.txt"
    else
      p=$(fi_pp 8); echo "fi_pingpong 8 B: $p us" ; echo "$p" >>"$RAW/fi-pingpong-lat8.txt"
      quiet
      u=$(ucx_bw 1048576); echo "ucx_perftest 1 MiB: $u MB/s"; echo "$u" >>"$RAW/ucx-tcp-bw1m.txt"
      quiet
      o=$(ompi_ofi_bw 1048576); echo "Open MPI ofi MTL 1 MiB: $o MB/s"; echo "$o" >>"$RAW/ompi-ofi-bw1m.txt"
    fi
  done
done

step "report"
python3 - "$RAW" "$OUT" "$REPS" <<'PY'
import statistics, sys, datetime, pathlib, platform, subprocess
raw, out, reps = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
def col(name, i):
    vals = []
    for line in (raw / name).read_text().split("\n"):
        f = line.split()
        if len(f) > i:
            try:
                vals.append(float(f[i]))
            except ValueError:
                pass
    return vals
def med(v):
    return statistics.median(v) if v else float("nan")
PROV_NAME = "tcp;ofi_rxm"
lat_avg, lat_p50 = col("ferry-lat8.txt", 1), col("ferry-lat8.txt", 2)
bw_avg, bw_p50 = col("ferry-bw1m.txt", 1), col("ferry-bw1m.txt", 2)
fi = col("fi-pingpong-lat8.txt", 0)
ucx = col("ucx-tcp-bw1m.txt", 0)
cloop = col("ferry-cloop-bw1m.txt", 0)
ompi = col("ompi-ofi-bw1m.txt", 0)
def fmt(v):
    return " / ".join(f"{x:.2f}" for x in v)
lat_ratio = med(lat_avg) / med(fi)
lat_ratio_p50 = med(lat_p50) / med(fi)
bw_ratio = med(bw_avg) / med(ucx)
cloop_ratio = med(cloop) / med(ucx)
noise = (raw / "noise.txt").read_text().strip() if (raw / "noise.txt").exists() else ""
cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], capture_output=True, text=True).stdout.strip()
lines = [
    "# ferry over libfabric (`FERRY_DEVICE=ofi`, `tcp;ofi_rxm`)",
    "",
    f"Generated by `ci/ofi-bench.sh` on {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC, "
    f"{reps} alternating repetitions, medians. Machine: {platform.node()}, {cpu}, 2 cores, "
    "loopback TCP; every program is two processes pinned to cores 0 and 1.",
    "",
    "| measure | ferry (ofi, tcp;ofi_rxm) | peer | ratio | target |",
    "|---|---|---|---|---|",
    f"| 8 B latency, one way (us) | {med(lat_avg):.2f} avg, {med(lat_p50):.2f} p50 | "
    f"{med(fi):.2f} (`fi_pingpong -p \"tcp;ofi_rxm\" -e rdm -m tagged`, usec/xfer) | "
    f"{lat_ratio:.2f}x avg, {lat_ratio_p50:.2f}x p50 | <= 1.15x: {'met' if lat_ratio <= 1.15 else 'MISSED'} |",
    f"| 1 MiB bandwidth (MB/s) | {med(bw_avg):.1f} avg, {med(bw_p50):.1f} p50 | "
    f"{med(ucx):.1f} (`ucx_perftest -t tag_bw`, `UCX_TLS=tcp`) | {bw_ratio:.2f}x | >= 1.0x: "
    f"{'met' if bw_ratio >= 1.0 else 'MISSED'} |",
    f"| 1 MiB bandwidth, osu_bw's loop on ferry's MPI C ABI (MB/s) | {med(cloop):.1f} | "
    f"{med(ucx):.1f} (the same runs) | {cloop_ratio:.2f}x | >= 1.0x: "
    f"{'met' if cloop_ratio >= 1.0 else 'MISSED'} |",
    f"| the provider's ceiling: osu_bw's loop on Open MPI's ofi MTL, same provider (MB/s) | "
    f"{med(ompi):.1f} | {med(ucx):.1f} (UCX) | {med(ompi) / med(ucx):.2f}x (ferry's C loop: "
    f"{med(cloop) / med(ompi):.2f}x of it) | — |",
    "",
    "Every repetition:",
    "",
    f"- ferry 8 B latency avg (us): {fmt(lat_avg)}; p50: {fmt(lat_p50)}",
    f"- fi_pingpong 8 B (us): {fmt(fi)}",
    f"- ferry 1 MiB bandwidth avg (MB/s): {fmt(bw_avg)}",
    f"- ferry C loop 1 MiB (MB/s): {fmt(cloop)}",
    f"- ucx_perftest tcp 1 MiB (MB/s): {fmt(ucx)}",
    f"- Open MPI ofi MTL, {PROV_NAME} 1 MiB (MB/s): {fmt(ompi)}",
    "",
    "How each side is measured:",
    "",
    "- `ferry-bench latency --device ofi --wait-mode spin --sizes 8`: OSU-style ping-pong, "
    "10000 iterations after 100 warm-up, half the round trip; `avg` is OSU's figure.",
    "- `fi_pingpong` (libfabric-bin): 20000 iterations of a tagged ping-pong on an RDM endpoint; "
    "its `usec/xfer` is the one-way figure (it does not fall with more iterations, so its "
    "setup is not what makes it slow here).",
    "- `ferry-bench bw --device ofi --sizes 1048576`: OSU-style window of nonblocking sends; "
    "ferry's rendezvous reads the payload with `fi_read` (FI_RMA) into the receive buffer.",
    "- osu_bw's loop (`benches/compare/src/mpi_bw.c`, window 64) built with ferry's `mpicc`, "
    "run by ferry's `mpiexec` with `FERRY_DEVICE=ofi`: one receive buffer for the whole "
    "window, as `ucx_perftest` has; its bandwidth column.",
    "- the same loop built with `mpicc.openmpi`, run by `mpirun --mca pml cm --mca mtl ofi "
    "--mca mtl_ofi_provider_include 'tcp;ofi_rxm'`: Open MPI on the provider ferry uses.",
    "- `ucx_perftest -t tag_bw -s 1048576 -n 2000 -w 200` with `UCX_TLS=tcp`: its overall "
    "bandwidth, MiB/s converted to MB/s.",
    "",
    "The machine is shared with other work (builds); each run waits for both cores to be "
    "90% idle for up to 60 s first and runs anyway afterwards. Latency averages on loopback TCP "
    "are dominated by scheduling outliers on a busy 2-core machine; the p50 column shows the "
    "typical round.",
]
if noise:
    lines += ["", "Runs that started on a busy machine:", "", "```", noise, "```"]
# Every run's medians, kept across runs: one run on a shared machine is
# not the whole story.
hist = raw / "history.log"
entry = (f"{datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC, {reps} reps{' (some runs started busy)' if noise else ''}: "
         f"latency {med(lat_avg):.2f} us avg / {med(lat_p50):.2f} p50 vs fi_pingpong {med(fi):.2f} "
         f"({lat_ratio:.2f}x); 1 MiB {med(bw_avg):.0f} MB/s (C loop {med(cloop):.0f}) vs ucx tcp "
         f"{med(ucx):.0f} ({bw_ratio:.2f}x; C loop {cloop_ratio:.2f}x); Open MPI ofi MTL {med(ompi):.0f}")
with hist.open("a") as h:
    h.write(entry + "\n")
lines += ["", "All runs of this script so far (newest last):", "", "```",
          hist.read_text().rstrip(), "```"]
out.write_text("\n".join(lines) + "\n")
print("\n".join(lines))
PY
