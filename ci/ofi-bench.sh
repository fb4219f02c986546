#!/usr/bin/env bash
# ci/ofi-bench.sh — ferry over libfabric (FERRY_DEVICE=ofi, tcp;ofi_rxm)
# side by side with libfabric's and UCX's own tools, on this machine:
#   - 8 B latency: `ferry-bench latency` against `fi_pingpong -p "tcp;ofi_rxm"
#     -e rdm -m tagged` (target: ferry <= 1.15 x fi_pingpong);
#   - 1 MiB bandwidth: `ferry-bench bw` against `ucx_perftest -t tag_bw` with
#     UCX_TLS=tcp (target: ferry >= 1.0 x ucx_perftest).
# Every program runs as two processes pinned to cores 0 and 1 (taskset), after
# waiting for a quiet machine (benches/compare/wait_quiet.sh); the four runs
# alternate, REPS times (default 5), and the report takes medians. Writes
# docs/perf/ofi.md and the raw lines to docs/perf/raw/ofi/.
#
# Env: REPS (default 5); CARGO_TARGET_DIR is honoured.
set -euo pipefail
cd "$(dirname "$0")/.."
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
packages=()
command -v fi_pingpong >/dev/null || packages+=(libfabric-bin)
command -v ucx_perftest >/dev/null || packages+=(ucx-utils)
dpkg -s libfabric-dev >/dev/null 2>&1 || packages+=(libfabric-dev)
command -v clang >/dev/null || packages+=(clang)
dpkg -s libclang-dev >/dev/null 2>&1 || packages+=(libclang-dev)
command -v pkg-config >/dev/null || packages+=(pkg-config)
if [ "${#packages[@]}" -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}"
fi

step "build"
cargo build --release --locked -p ferry-bench --features ofi
cargo build --release --locked -p ferry --bin ferryrun
FB=$TARGET/release/ferry-bench
FR=$TARGET/release/ferryrun

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
    else
      p=$(fi_pp 8); echo "fi_pingpong 8 B: $p us" ; echo "$p" >>"$RAW/fi-pingpong-lat8.txt"
      quiet
      u=$(ucx_bw 1048576); echo "ucx_perftest 1 MiB: $u MB/s"; echo "$u" >>"$RAW/ucx-tcp-bw1m.txt"
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
lat_avg, lat_p50 = col("ferry-lat8.txt", 1), col("ferry-lat8.txt", 2)
bw_avg, bw_p50 = col("ferry-bw1m.txt", 1), col("ferry-bw1m.txt", 2)
fi = col("fi-pingpong-lat8.txt", 0)
ucx = col("ucx-tcp-bw1m.txt", 0)
def fmt(v):
    return " / ".join(f"{x:.2f}" for x in v)
lat_ratio = med(lat_avg) / med(fi)
lat_ratio_p50 = med(lat_p50) / med(fi)
bw_ratio = med(bw_avg) / med(ucx)
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
    "",
    "Every repetition:",
    "",
    f"- ferry 8 B latency avg (us): {fmt(lat_avg)}; p50: {fmt(lat_p50)}",
    f"- fi_pingpong 8 B (us): {fmt(fi)}",
    f"- ferry 1 MiB bandwidth avg (MB/s): {fmt(bw_avg)}",
    f"- ucx_perftest tcp 1 MiB (MB/s): {fmt(ucx)}",
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
         f"({lat_ratio:.2f}x); 1 MiB {med(bw_avg):.0f} MB/s vs ucx tcp {med(ucx):.0f} ({bw_ratio:.2f}x)")
with hist.open("a") as h:
    h.write(entry + "\n")
lines += ["", "All runs of this script so far (newest last):", "", "```",
          hist.read_text().rstrip(), "```"]
out.write_text("\n".join(lines) + "\n")
print("\n".join(lines))
PY
