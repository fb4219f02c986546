#!/usr/bin/env bash
# ci/perftest-vm.sh — perftest (ib_*_lat, ib_*_bw) over Soft-RoCE inside the
# ci/softroce.sh VM, with optional ferry commands alternated in the same boot.
#
# Usage: ci/perftest-vm.sh [--mode poll|events] [--reps N] [--quick] [--max-wait S]
#                          [-f PATH]... [--ferry 'cmd']... [--out FILE | --no-doc]
#   --mode M      poll (default): completion polling, 2 vCPUs, server and client
#                 pinned to vCPU 0 and 1. events: perftest -e where it exists
#                 (not for WRITE), 1 vCPU. See docs/perf/verbs-perftest.md.
#   --reps N      repetitions (default 5); every figure is the median over them
#   --quick       1 repetition (unless --reps is given) and fewer iterations
#   --max-wait S  first wait up to S seconds (default 60; 0: no wait) for both
#                 host CPUs to be >= 90% idle; the report says if it gave up
#   -f PATH       extra file/dir for the VM (ferry binaries); see ci/softroce.sh
#   --ferry CMD   a command run inside the VM once per repetition, right after
#                 the perftest block (A B A B ...). Its stdout must be in
#                 ferry-bench format: '#' header lines, the last one naming the
#                 columns ("# size col ..."), then rows "size value ...".
#                 Repeatable. Medians per size and column are printed after perftest's.
#   --out FILE    write the Markdown report there (default docs/perf/verbs-perftest.md)
#   --no-doc      print the table only
# Env: FERRY_VM_SMP overrides the mode's vCPU count; other FERRY_VM_* knobs as in
# ci/softroce.sh. The raw console log is kept in the VM cache dir
# (perftest-<time>-<pid>.log; perftest-last.log points at the latest).
#
# Prints an OSU-like table on stdout: per tool a '# perftest ...' header, then
# 'size value' rows: median t_typical latency (us) or median BW average (MB/s).
# Exit status: ci/softroce.sh's (non-zero if any perftest or ferry run failed).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)

MODE=poll REPS="" ARGS_NOTE="" QUICK=0 MAXWAIT=60 OUT=$ROOT/docs/perf/verbs-perftest.md
FILES=() FERRY=()
while [ $# -gt 0 ]; do
  case $1 in
    --mode) MODE=$2; ARGS_NOTE+=" --mode $2"; shift 2;;
    --reps) REPS=$2; ARGS_NOTE+=" --reps $2"; shift 2;;
    --quick) QUICK=1; ARGS_NOTE+=" --quick"; shift;;
    --max-wait) MAXWAIT=$2; shift 2;;
    -f) FILES+=(-f "$2"); shift 2;;
    --ferry) FERRY+=("$2"); shift 2;;
    --out) OUT=$2; shift 2;;
    --no-doc) OUT=""; shift;;
    -h|--help) sed -n '2,27p' "$0"; exit 0;;
    *) echo "ci/perftest-vm.sh: unknown argument $1" >&2; exit 2;;
  esac
done
case $MODE in
  poll) SMP_DEFAULT=2;;
  events) SMP_DEFAULT=1;;
  *) echo "ci/perftest-vm.sh: --mode must be poll or events" >&2; exit 2;;
esac
if [ $QUICK = 1 ]; then
  REPS=${REPS:-1}; NS=200 NL=50 NB=20
else
  REPS=${REPS:-5}; NS=1000 NL=200 NB=100   # iterations: 8 B latency, 64 KiB latency, 1 MiB bandwidth
fi
SMP_NOTE=""
[ -z "${FERRY_VM_SMP:-}" ] || SMP_NOTE="FERRY_VM_SMP=$FERRY_VM_SMP "
export FERRY_VM_SMP=${FERRY_VM_SMP:-$SMP_DEFAULT}
# ~20 s per repetition on a quiet host; allow for a busy one and for the ferry commands.
export FERRY_VM_TIMEOUT=${FERRY_VM_TIMEOUT:-$((120 + REPS * (120 + 120 * ${#FERRY[@]})))}

target=${CARGO_TARGET_DIR:-target}
case $target in /*) ;; *) target=$ROOT/$target;; esac
CACHE=${FERRY_VM_DIR:-$target/softroce}
mkdir -p "$CACHE"
# One log per run (concurrent runs share the cache dir); perftest-last.log links the latest.
RAW=$CACHE/perftest-$(date -u +%Y%m%dT%H%M%S)-$$.log
find "$CACHE" -maxdepth 1 -name 'perftest-*.log' -mtime +7 -delete 2>/dev/null || true

# The ferry commands travel into the VM as files (one per command), so that any
# quoting inside them survives.
T=$(mktemp -d /tmp/ferry-perftest.XXXXXX)
trap 'rm -rf "$T"' EXIT
ferry_files=""
for i in "${!FERRY[@]}"; do
  printf '%s\n' "${FERRY[$i]}" > "$T/ferry.$((i + 1))"
  ferry_files+=" $T/ferry.$((i + 1))"
done
BENCH=$ROOT/ci/vm/perftest-bench.sh
CMD="sh $BENCH $MODE $REPS $NS $NL $NB$ferry_files"

# The emulated vCPUs are host threads: a vCPU that loses its host core stalls the
# guest for a host time slice. Start when the host is idle, if it gets idle soon.
# (Percent idle of each host CPU over 0.5 s, from /proc/stat.)
host_idle_pct() {
  local a b
  a=$(awk '/^cpu[0-9]/ {print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8}' /proc/stat)
  sleep 0.5
  b=$(awk '/^cpu[0-9]/ {print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8}' /proc/stat)
  paste <(echo "$a") <(echo "$b") | awk '{t = $4 - $2; printf "%d ", (t > 0 ? 100 * ($3 - $1) / t : 100)}'
}
quiet="yes"
waited=0
while :; do
  idle=$(host_idle_pct)
  busy=0
  for pct in $idle; do [ "$pct" -ge 90 ] || busy=1; done
  [ $busy = 1 ] || break
  if [ "$waited" -ge "$MAXWAIT" ]; then quiet="no (host CPUs idle: ${idle% }%, gave up after ${MAXWAIT} s)"; break; fi
  sleep 1.5
  waited=$((waited + 2))
done

# How much host CPU other work took during the run: all busy time on the host
# minus what our own children (QEMU) used, both in clock ticks.
host_busy() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat; }
own_ticks() { awk '{print $16 + $17}' "/proc/$$/stat"; }   # cutime + cstime
read -r busy0 total0 < <(host_busy)
own0=$(own_ticks)
others_vms=$(($(pgrep -c qemu-system-x86 || true)))
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "[perftest-vm] mode $MODE, $REPS repetition(s), SMP=$FERRY_VM_SMP, ${#FERRY[@]} ferry command(s); host quiet at start: $quiet; log: $RAW" >&2
set +e
"$ROOT/ci/softroce.sh" -f "$BENCH" -f "$T" ${FILES[@]+"${FILES[@]}"} -- "$CMD" > "$RAW" 2> "$T/stderr"
rc=$?
set -e
ln -sfn "$(basename "$RAW")" "$CACHE/perftest-last.log"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
read -r busy1 total1 < <(host_busy)
own1=$(own_ticks)
others_pct=$(( (total1 > total0) ? 100 * ((busy1 - busy0) - (own1 - own0)) / (total1 - total0) : 0 ))
[ "$others_pct" -ge 0 ] || others_pct=0
echo "[perftest-vm] other work used ~${others_pct}% of the host's CPU time during the run; other QEMU VMs at the start: $others_vms" >&2
cat "$T/stderr" >&2
grep -A30 -E '^@@(FAIL|BAD)' "$RAW" >&2 || true
wall=$(sed -n 's/.*VM wall time (boot + run): \([0-9.]*\) s.*/\1/p' "$T/stderr" | tail -1)

# ---- medians -------------------------------------------------------------------
TABLE=$T/table SUMMARY=$T/summary
awk -v reps="$REPS" -v ns="$NS" -v nl="$NL" -v nb="$NB" -v mode="$MODE" -v summary="$SUMMARY" '
  function median(list,   a, n, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    if (n == 0) return ""
    return (n % 2) ? a[(n + 1) / 2] + 0 : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  function minmax(list,   a, n, i, lo, hi) {
    n = split(list, a, " "); lo = hi = a[1] + 0
    for (i = 2; i <= n; i++) { if (a[i] + 0 < lo) lo = a[i] + 0; if (a[i] + 0 > hi) hi = a[i] + 0 }
    return lo " " hi " " n
  }
  $1 == "@@P" {
    k = $3 SUBSEP $4
    if (!(k in vals)) { order[++nk] = k }
    vals[k] = vals[k] " " $5
    next
  }
  $1 == "@@F" {
    idx = $2; line = $0; sub(/^@@F [0-9]+ [0-9]+ /, "", line)
    if (!(idx in seenf)) { seenf[idx] = 1; fidx[++nf] = idx }
    if (line ~ /^#/) { hdr[idx] = line; next }
    n = split(line, w, " ")
    if (n < 2 || w[1] !~ /^[0-9]+$/) next
    fk = idx SUBSEP w[1]
    if (!(fk in fcols)) { fsize[idx, ++fns[idx]] = w[1] }
    fcols[fk] = n - 1
    for (c = 2; c <= n; c++) fv[idx, w[1], c] = fv[idx, w[1], c] " " w[c]
    next
  }
  END {
    for (i = 1; i <= nk; i++) {
      split(order[i], p, SUBSEP); tool = p[1]; size = p[2]
      if (tool != last) {
        how = (mode == "poll") ? "polling, server/client pinned to vCPU 0/1" \
            : (tool ~ /^ib_write_/ ? "polling (no -e for WRITE)" : "-e: completion events")
        if (tool ~ /_lat$/) {
          printf "%s# perftest %s -d rxe0 -F -n %d (8 B) / %d (64 KiB); %s\n# t_typical latency (us), median of %d rep(s)\n# %-10s %14s\n", (i > 1 ? "\n" : ""), tool, ns, nl, how, reps, "size", "latency_us"
        } else {
          printf "%s# perftest %s -d rxe0 -F -n %d; %s\n# BW average (MB/s), median of %d rep(s)\n# %-10s %14s\n", (i > 1 ? "\n" : ""), tool, nb, how, reps, "size", "bw_MBps"
        }
        last = tool
      }
      m = median(vals[order[i]])
      printf "  %-10s %14.2f\n", size, m
      printf "%s %s %.2f %s\n", tool, size, m, minmax(vals[order[i]]) > summary
    }
    for (f = 1; f <= nf; f++) {
      idx = fidx[f]
      printf "\n# ferry command %d, median of %d rep(s)\n%s\n", idx, reps, (idx in hdr ? hdr[idx] : "# size value ...")
      for (s = 1; s <= fns[idx]; s++) {
        size = fsize[idx, s]; line = sprintf("  %-10s", size)
        for (c = 2; c <= fcols[idx SUBSEP size] + 1; c++) line = line sprintf(" %14.4g", median(fv[idx, size, c]))
        print line
      }
    }
  }' "$RAW" > "$TABLE"
cat "$TABLE"

if [ -n "$OUT" ] && [ -s "$SUMMARY" ]; then
  K=$(find "$CACHE" -maxdepth 1 -name 'kernel-*' -printf '%f\n' | head -1); K=${K#kernel-}
  qv=$(qemu-system-x86_64 --version | head -1)
  pv=$(dpkg-query -W -f='${Version}' perftest 2>/dev/null || echo '?')
  cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
  bad=$(grep -c '^@@BAD' "$RAW" || true)
  if [ "$MODE" = poll ]; then
    how="polling completions (perftest's default); server \`taskset 1\` (vCPU 0), client \`taskset 2\` (vCPU 1)"
  else
    how="\`-e\` (completion events) for ib_send_lat, ib_read_lat, ib_send_bw, ib_read_bw; ib_write_lat and ib_write_bw poll (perftest has no \`-e\` for WRITE); no pinning"
  fi
  {
    echo "# perftest over Soft-RoCE in a TCG-emulated VM"
    echo
    echo "> **Soft-RoCE (rdma_rxe) under QEMU TCG emulation, no KVM.** Every guest instruction,"
    echo "> including the kernel's rxe packet processing, is emulated, and the VM shares 2 host cores"
    echo "> with other work: the absolute figures say nothing about RDMA performance. Only ratios"
    echo "> measured in the same VM boot (ferry's verbs device against perftest, alternated with"
    echo "> \`--ferry\`) mean anything."
    echo
    echo "Generated by \`${SMP_NOTE}ci/perftest-vm.sh$ARGS_NOTE\` on $(date -u '+%Y-%m-%d %H:%M UTC'). VM wall time (boot + run) ${wall:-?} s, exit status $rc."
    echo "Host idle at the start: $quiet; other QEMU VMs running at the start: $others_vms. During the run, other work used ~${others_pct}% of the host's CPU time (noise indicator: 0% is a quiet host). Load average (1, 5, 15 min): $load_before before, $load_after after."
    if [ "$bad" != 0 ]; then echo "$bad sample(s) dropped: perftest printed a non-numeric value (inf); see the raw log."; fi
    echo
    echo "- VM: \`ci/softroce.sh\`, Debian kernel $K, $qv, TCG (multi-threaded), $FERRY_VM_SMP vCPU(s), ${FERRY_VM_MEM:-1024} MiB; rxe0 over dummy0 (10.99.0.1), RoCE v2, RC QPs, active MTU 1024."
    echo "- Host: $cpu, $(nproc) CPUs, shared with other engineers' builds."
    echo "- perftest $pv, server and client in the same VM, client to 127.0.0.1 (out-of-band TCP exchange), a fresh port per run; flags \`-d rxe0 -F -s SIZE -n ITERS\`."
    echo "- Mode \`$MODE\`: $how."
    echo "- Iterations: \`-n $NS\` at 8 B and \`-n $NL\` at 64 KiB (latency), \`-n $NB\` at 1 MiB (bandwidth)."
    echo "- Latency: perftest's \`t_typical\` (its median over iterations), in µs. Bandwidth: perftest's \`BW average\`, in MB/s as perftest reports them."
    echo "- Every figure is the median over $REPS repetition(s) (one perftest block per repetition, each tool a fresh server/client pair); min and max over repetitions alongside."
    echo
    echo "| tool | size (B) | median | min | max | samples | unit |"
    echo "|---|---|---|---|---|---|---|"
    while read -r tool size med lo hi n; do
      unit="µs"
      case $tool in *_bw) unit="MB/s";; esac
      echo "| $tool | $size | **$med** | $lo | $hi | $n | $unit |"
    done < "$SUMMARY"
    echo
    echo "OSU-like form, as the script prints it:"
    echo
    echo '```'
    cat "$TABLE"
    echo '```'
    echo
    echo "## Adding ferry side by side"
    echo
    echo "\`ci/perftest-vm.sh -f target/release/ferry-bench -f target/release/ferryrun --ferry 'CMD'\` runs CMD in the"
    echo "same VM once per repetition, right after the perftest block (A B A B ...). CMD's stdout must be in"
    echo "ferry-bench format (\`#\` headers, the last one naming the columns, then \`size value ...\` rows); the"
    echo "script prints the per-size, per-column medians after perftest's. Inside the VM, RDMA_DEV=rxe0 and"
    echo "FERRY_VM_IP=10.99.0.1; FERRY_* and RUST_* variables are passed through from the host. For a fair"
    echo "ratio, run ferry like perftest in the chosen mode: in \`poll\` mode, ranks pinned with"
    echo "\`taskset 1\` / \`taskset 2\` and polling; in \`events\` mode, ferry's blocking wait."
    echo
    echo "## Choosing the mode: SMP=1 or 2, polling or events"
    echo
    echo "Measured while building this harness (ib_send_lat, ib_write_lat, ib_read_lat, ib_*_bw; -n 50 to 500; 2 to 4 runs each):"
    echo
    echo "- **1 vCPU, polling**: ~4000 µs per message for every latency tool and size. Both processes spin"
    echo "  on the one vCPU, so each message waits for a scheduler tick (4 ms at HZ=250): this measures the"
    echo "  guest scheduler. (ib_write_bw/ib_read_bw are fine: their server side does not poll.)"
    echo "- **1 vCPU, \`-e\`**: stable even with the host loaded (load average ~4 on 2 cores): ib_send_lat"
    echo "  8 B 98-104 µs, ib_read_lat 8 B 38-55 µs, 64 KiB ~1000-1300 µs; but perftest refuses \`-e\` for"
    echo "  WRITE (\"Events feature not available on WRITE verb\"), so ib_write_lat stays tick-bound, and"
    echo "  wake-up costs (~90 µs at 8 B) dominate, hiding a library's own overhead. A full"
    echo "  \`--mode events\` run (5 repetitions, 2026-11-21 06:13 UTC, other work using ~59% of the host)"
    echo "  gave ib_send_lat 8 B 99.7-105.1 µs (median 101.4), 64 KiB median 1255 µs; ib_read_lat 8 B"
    echo "  36.8-41.0 µs (median 38.4), 64 KiB 966-1104 µs (median 1036); ib_write_lat 4010-7649 µs (tick-bound)."
    echo "- **2 vCPUs, \`-e\`**: noisy (ib_send_lat 8 B: t_typical 125 µs, average ~1000 µs, max 7 ms)."
    echo "- **2 vCPUs, polling**: on a quiet host, 9-10 µs at 8 B and ~950-1000 µs at 64 KiB, within ~10%"
    echo "  run to run, for all three latency tools. With the host busy (other builds) it turns bimodal:"
    echo "  each vCPU is a host thread, and when the two share one host core every round trip waits for a"
    echo "  host time slice, giving 4000-6000 µs (the 64 KiB rows suffer most, the 8 B rows and"
    echo "  ib_read_lat, whose server side does not poll, least). Two default runs on 2026-11-21 (06:12 and"
    echo "  06:20 UTC) with other work using ~63% of the host gave 64 KiB medians of 3.6-4.0 ms for"
    echo "  ib_send_lat and ib_write_lat, while 8 B (9.6-16.2 µs) and ib_read_lat (27-31 µs; 1.1-1.4 ms)"
    echo "  barely moved. Pinning the two processes to different vCPUs removes the guest-side form of the"
    echo "  same problem; \`nice -n 19\` (to let ksoftirqd preempt the spinners) made no measurable difference."
    echo "- Bandwidth at 1 MiB is ~35-62 MB/s in every setting (rxe's in-kernel copy and CRC under emulation)."
    echo
    echo "Default: \`poll\` (2 vCPUs, pinned), the only setting where all three latency tools measure the"
    echo "RDMA path at ~10 µs, so a library's overhead is visible in the ratio, and how an MPI library"
    echo "drives completions. It needs both host cores: the script first waits (\`--max-wait\`) for the host"
    echo "to go idle and the report says whether it did; on a busy host trust only ratios within one boot,"
    echo "or use \`--mode events\`, which is robust to host load but blind to WRITE latency."
  } > "$OUT"
  echo "[perftest-vm] wrote $OUT" >&2
fi
exit "$rc"
