#!/usr/bin/env python3
"""The collective part of the comparison report (report.py --suite coll).

Reads raw/coll/rep<N>/<peer>.<bench>.txt (run.sh --suite coll; ferry-bench
format: '#' headers, the last naming the columns, rows `size value ...`),
takes the median over repetitions and writes:
  collectives.md          tables, ratios ferry / best peer, targets, commands
  coll-<bench>.svg        latency (or pure time) vs size, log-log
  raw/coll/results.csv    every value: rep, peer, bench, size, metric, value
  raw/coll/summary.json   median, min, max, n for every (peer, bench.metric, size)
Standard library only.
"""
import csv
import datetime
import json
import math
import os
import re
import statistics
from collections import defaultdict

import report
from report import fmt_num, fmt_size, parse_file, svg_plot

# peer id -> (label, kind); kind: ferry, ferry-alt (shown, never a target),
# mpi (candidate for best peer)
PEERS = [
    ("ferry", "ferry (shm; blocking calls, FERRY_WAIT_MODE hybrid)", "ferry"),
    ("ferry-persistent", "ferry, persistent form (*_init + start/wait)", "ferry-alt"),
    ("ferry-p2p", "ferry, every collective point-to-point (FERRY_COLL_NODE=0)", "ferry-alt"),
    ("ferry-async", "ferry with its progress thread (FERRY_ASYNC_PROGRESS=1)", "ferry-alt"),
    ("ferry-mpi", "ferry's MPI C ABI (libmpi_abi.so.1, the C peers built with its mpicc)", "ferry-alt"),
    ("ompi", "Open MPI 4.1, defaults (pml ob1, coll tuned)", "mpi"),
    ("ompi-vader", "Open MPI 4.1, --mca pml ob1 --mca btl vader,self", "mpi"),
    ("mpich", "MPICH 4.0 (ch4)", "mpi"),
    ("ompi-ucc", "Open MPI 4.1 with coll ucc", "mpi"),
    ("floor", "two C threads pinned to the two cores, one cache line each way (src/floor_barrier.c)", "ref"),
]
SHORT = {"ferry": "ferry", "ferry-persistent": "ferry persistent", "ferry-p2p": "ferry p2p",
         "ferry-async": "ferry async", "ferry-mpi": "ferry MPI", "ompi": "OMPI default",
         "ompi-vader": "OMPI ob1+vader", "mpich": "MPICH", "ompi-ucc": "OMPI ucc",
         "floor": "floor"}
LABEL = {p: l for p, l, _ in PEERS}
KIND = {p: k for p, _, k in PEERS}
BLOCKING = ["barrier", "bcast", "reduce", "allreduce", "allgather", "alltoall"]
NONBLOCKING = ["ibarrier", "ibcast", "iallreduce", "ialltoall"]
METRICS = {"avg_us", "min_us", "max_us", "p50_us", "overall_us", "compute_us", "pure_us",
           "overlap_pct", "wait_cpu_pct", "allocs/iter"}


def load(raw):
    """-> list of (rep, peer, bench, size, metric, value); metric = bench.column"""
    out = []
    for rep_dir in sorted(os.listdir(raw)):
        m = re.fullmatch(r"rep(\d+)", rep_dir)
        if not m:
            continue
        for fn in sorted(os.listdir(os.path.join(raw, rep_dir))):
            m2 = re.fullmatch(r"(.+)\.([a-z]+)\.txt", fn)
            if not m2 or m2.group(2) not in BLOCKING + NONBLOCKING:
                continue
            peer, bench = m2.groups()
            cols, rows = parse_file(os.path.join(raw, rep_dir, fn))
            for size, vals in rows:
                for c, v in zip(cols, vals):
                    if c in METRICS and not math.isnan(v):
                        out.append((int(m.group(1)), peer, bench, size, f"{bench}.{c}", v))
    return out


def summarize(records):
    vals = defaultdict(list)
    for _, peer, _, size, metric, v in records:
        vals[(peer, metric, size)].append(v)
    return {k: {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}
            for k, v in vals.items()}


def best_peer(summ, metric, size, lower=True):
    cands = [(summ[(p, metric, size)]["median"], p) for p, _, k in PEERS
             if k == "mpi" and (p, metric, size) in summ]
    if not cands:
        return None, None
    v, p = (min if lower else max)(cands)
    return p, v


def ratio(summ, metric, size, who="ferry"):
    f = summ.get((who, metric, size))
    bp, bv = best_peer(summ, metric, size)
    if f is None or not bv:
        return None, bp, bv
    return f["median"] / bv, bp, bv


def sizes_of(summ, metric):
    return sorted({s for (_, m, s) in summ if m == metric})


def present(summ, metric):
    have = {p for (p, m, _) in summ if m == metric}
    return [p for p, _, _ in PEERS if p in have]


def table(summ, metric, unit="us"):
    """sizes x peers, medians; the best MPI peer in bold; ferry / best."""
    peers = present(summ, metric)
    pers = "ferry-persistent" in peers
    head = ["size"] + [SHORT[p] for p in peers] + ["best peer", "ferry / best"] + \
        (["ferry persistent / best"] if pers else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in sizes_of(summ, metric):
        r, bp, _ = ratio(summ, metric, s)
        rp, _, _ = ratio(summ, metric, s, "ferry-persistent")
        cells = [fmt_size(s)]
        for p in peers:
            e = summ.get((p, metric, s))
            txt = fmt_num(e["median"], unit) if e else "–"
            cells.append(f"**{txt}**" if p == bp else txt)
        cells += [SHORT.get(bp, "–"), f"{r:.2f}" if r is not None else "–"]
        if pers:
            cells.append(f"{rp:.2f}" if rp is not None else "–")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plain_table(summ, metric, fmt):
    """sizes x peers, medians, no ratio (overlap %, CPU %)."""
    peers = present(summ, metric)
    lines = ["| size | " + " | ".join(SHORT[p] for p in peers) + " |", "|" + "---|" * (len(peers) + 1)]
    for s in sizes_of(summ, metric):
        cells = [fmt_size(s)]
        for p in peers:
            e = summ.get((p, metric, s))
            cells.append(fmt.format(e["median"]) if e else "–")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def spread(summ, metric):
    """ferry's median [min–max] over repetitions."""
    e = [(s, summ[("ferry", metric, s)]) for s in sizes_of(summ, metric) if ("ferry", metric, s) in summ]
    return ", ".join(f"{fmt_size(s)}: {fmt_num(x['median'], 'us')} [{fmt_num(x['min'], 'us')}–"
                     f"{fmt_num(x['max'], 'us')}]" for s, x in e) or "–"


def targets(summ):
    rows = []

    def vs_peer(fig, target, metric, size, limit):
        r, bp, bv = ratio(summ, metric, size)
        f = summ.get(("ferry", metric, size))
        if r is None:
            rows.append((fig, target, "not measured", "–"))
            return
        rows.append((fig, target, f"{f['median']:.3g} µs vs {bv:.3g} µs ({SHORT[bp]}): **{r:.2f}**",
                     "met" if r <= limit else "**missed**"))

    def absolute(fig, target, metric, size, ok, who="ferry"):
        f = summ.get((who, metric, size))
        if f is None:
            rows.append((fig, target, f"not measured ({SHORT[who]})", "–"))
            return
        rows.append((fig, target, f"{SHORT[who]}: {f['median']:.3g} (min {f['min']:.3g}, max {f['max']:.3g})",
                     "met" if ok(f["median"]) else "**missed**"))

    vs_peer("barrier", "≤ 0.5 × best peer", "barrier.avg_us", 0, 0.5)
    floor = summ.get(("floor", "barrier.avg_us", 0))
    if floor is not None:
        _, _, bv = ratio(summ, "barrier.avg_us", 0)
        half = f"; 0.5 × best peer = {0.5 * bv:.3g} µs" if bv else ""
        rows.append(("barrier floor: two threads, one cache line each way, no timing per call",
                     "(for reference)", f"floor: {floor['median']:.3g} µs{half}", "–"))
    vs_peer("ibarrier + wait (pure time)", "≤ 0.5 × best peer", "ibarrier.pure_us", 0, 0.5)
    vs_peer("allreduce 8 B", "≤ 0.6 × best peer", "allreduce.avg_us", 8, 0.6)
    vs_peer("allreduce 1 MiB", "≤ 0.9 × best peer", "allreduce.avg_us", 1 << 20, 0.9)
    vs_peer("bcast 8 B", "≤ 0.9 × best peer", "bcast.avg_us", 8, 0.9)
    vs_peer("bcast 1 MiB", "≤ 0.9 × best peer", "bcast.avg_us", 1 << 20, 0.9)
    absolute("iallreduce 1 MiB overlap, %", "≥ 90 % (async progress on)",
             "iallreduce.overlap_pct", 1 << 20, lambda v: v >= 90, "ferry-async")
    absolute("iallreduce 1 MiB overlap, %, without the progress thread", "(for reference)",
             "iallreduce.overlap_pct", 1 << 20, lambda v: v >= 90)
    absolute("CPU of rank 0 blocked 2 s in an ibarrier wait, % of a core", "< 2 %",
             "ibarrier.wait_cpu_pct", 0, lambda v: v < 2)
    lines = ["| figure | target | ferry (median over repetitions) | |", "|---|---|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def runs_log(raw):
    path = os.path.join(raw, "runs.log")
    if not os.path.exists(path):
        return 0, [], [], []
    with open(path) as f:
        txt = f.read()
    lines = txt.splitlines()
    cmds = []
    for l in lines:
        m = re.match(r"\S+ run (\S+?)\.txt: (.*)", l)
        if m and m.group(1).split(".")[0] not in {c[0] for c in cmds}:
            cmds.append((m.group(1).split(".")[0], m.group(2)))
    return (txt.count("NOISY:"), [l.split(" ", 1)[1] for l in lines if "FAILED" in l],
            [l.split("SKIPPED: ", 1)[1] for l in lines if "SKIPPED: " in l], cmds)


def main(raw, out, note=""):
    recs = load(raw)
    if not recs:
        raise SystemExit(f"coll_report.py: no results under {raw}")
    summ = summarize(recs)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(raw, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["rep", "peer", "bench", "size", "metric", "value"])
        w.writerows(recs)
    with open(os.path.join(raw, "summary.json"), "w") as f:
        json.dump([{"peer": p, "metric": m, "size": s, **v} for (p, m, s), v in sorted(summ.items())], f, indent=1)
    reps = sorted({r[0] for r in recs})
    noisy, failed, skipped, cmds = runs_log(raw)
    mach, vers = report.machine_info()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    plots = {}
    for b, metric, what in [(b, f"{b}.avg_us", "latency, µs") for b in BLOCKING if b != "barrier"] + \
            [(b, f"{b}.pure_us", "post + wait, µs") for b in NONBLOCKING if b != "ibarrier"]:
        fn = f"coll-{b}.svg"
        if svg_plot(os.path.join(out, fn), f"{b}, 2 ranks (median over repetitions)", what, summ, metric,
                    peers=PEERS, xlabel="bytes (per rank for allgather, alltoall; log scale)"):
            plots[b] = fn
    md = [
        "# ferry collectives: side by side with Open MPI and MPICH",
        "",
        f"Generated by `ci/compare.sh` (`benches/compare/run.sh --suite coll`, `report.py --suite coll`) on {now}. "
        f"{len(reps)} alternating repetition(s) (every peer runs once per repetition, in turn); every figure is "
        "the **median over repetitions**. 2 ranks pinned to cores 0 and 1, each run after both CPUs were ≥ 90 % idle.",
        "",
        f"Machine: {mach}." + (" Packages: " + "; ".join(vers) + "." if vers else ""),
        "",
    ]
    if note:
        md += [note, ""]
    if noisy:
        md += [f"**Noise warning:** {noisy} run(s) started while the machine was still busy (see "
               "`raw/coll/runs.log`). Ratios measured side by side stay meaningful; absolute figures may be inflated.", ""]
    if failed:
        md += ["Runs that failed (see `raw/coll/runs.log`):", ""] + [f"- `{x}`" for x in failed[:20]] + [""]
    if skipped:
        md += ["Peers skipped:", ""]
        for x in skipped:
            if x.startswith("ompi_ucc") and "component was not found" in x:
                x += (" … (MPI_Init fails: this Open MPI has no coll/ucc component; Debian 12's Open MPI 4.1.4 "
                      "is built without UCC, and Debian 12 has no UCC package)")
            md.append(f"- {x}")
        md.append("")
    md += [
        "**Ratios: ferry / best peer**, the best of the MPI peers measured (Open MPI with its defaults, Open MPI "
        "ob1+vader, MPICH, and Open MPI with UCC where it runs); lower is better, < 1 means ferry is faster. "
        "The best peer's figure is in bold. *ferry persistent* is ferry's MPI 4.0 persistent form of the same "
        "collective, *ferry p2p* the same calls with the node collectives off (`FERRY_COLL_NODE=0`), *ferry async* "
        "with the progress thread (`FERRY_ASYNC_PROGRESS=1`); they are shown for reference: the targets are for "
        "ferry's defaults and blocking calls, as OSU measures them, except overlap, which asks for async progress.",
        "",
        "## Targets",
        "",
        targets(summ),
        "",
        "Overlap: by default ferry progresses only inside its calls, so between the post and the wait nothing "
        "advances a collective but what the post itself started (eager sends) and what the peer delivers "
        "meanwhile; *ferry async* runs with its progress thread (`FERRY_ASYNC_PROGRESS=1`). Pinned as every run "
        "is (`taskset -c RANK` on the whole process), that thread shares its rank's core with the computing "
        "thread, so it can progress only when the scheduler preempts the computation. The MPI peers run without "
        "a progress thread (none in Open MPI's or MPICH's defaults).",
        "",
        "## Blocking collectives (µs, OSU's average over the ranks of each rank's mean call)",
        "",
    ]
    for b in BLOCKING:
        metric = f"{b}.avg_us"
        if not sizes_of(summ, metric):
            continue
        md += [f"### {b}", ""]
        if b in plots:
            md += [f"![{b}]({plots[b]})", ""]
        md += [table(summ, metric), "", f"ferry's spread [min–max over repetitions]: {spread(summ, metric)}", ""]
    md += ["## Nonblocking collectives", "",
           "Pure time: post + wait at once, µs (OSU's *Pure Comm.*); the ratio is on it.", ""]
    for b in NONBLOCKING:
        metric = f"{b}.pure_us"
        if not sizes_of(summ, metric):
            continue
        md += [f"### {b}", ""]
        if b in plots:
            md += [f"![{b}]({plots[b]})", ""]
        md += [table(summ, metric), "", "Overlap, % (OSU's formula; higher is better):", "",
               plain_table(summ, f"{b}.overlap_pct", "{:.1f}"), ""]
    if sizes_of(summ, "ibarrier.wait_cpu_pct"):
        md += ["### CPU of a rank blocked in an ibarrier wait", "",
               "Rank 0 posts an ibarrier and waits while rank 1 sleeps 2 s before posting its own; the CPU time "
               "rank 0's process used meanwhile (getrusage), in % of one core. ferry waits in its default hybrid "
               "mode (spin, then sleep on the device's fd); the MPI peers poll.", "",
               plain_table(summ, "ibarrier.wait_cpu_pct", "{:.2f}"), ""]
    allocs = [(b, s, summ[(p, m, s)]["median"]) for (p, m, s) in sorted(summ)
              if p == "ferry" and m.endswith(".allocs/iter") for b in [m.split(".")[0]]]
    if allocs:
        md += ["## ferry's heap allocations per call", "",
               "`ferry-bench`'s `allocs/iter` column (the most of either rank; counted around the timed call "
               "only). The benchmark loops allocate nothing themselves; these are ferry's. Where they come from "
               "(`benches/tests/coll_alloc.rs` finds them with a recording allocator and asserts them for "
               "allreduce): on the point-to-point path a blocking call or a post builds its schedule every time "
               "(and a blocking call lends the caller's slices), about 12 allocations; the persistent form builds it "
               "once, and then allocates only for eager messages that arrived before their receive was posted "
               "(copied out of the device) and for matching-lane churn. The node collectives (barrier, bcast, "
               "reduce, allreduce on shared memory, the default) allocate nothing per call since `2855f43`; "
               "before it, every poll that found a peer not there yet allocated in `must_wait` "
               "(`shm/src/node/mod.rs`).", "",
               "| bench | " + " | ".join(fmt_size(s) for s in sorted({s for _, s, _ in allocs})) + " |",
               "|---|" + "---|" * len({s for _, s, _ in allocs})]
        sizes = sorted({s for _, s, _ in allocs})
        for b in BLOCKING + NONBLOCKING:
            row = {s: v for bb, s, v in allocs if bb == b}
            if row:
                md.append(f"| {b} | " + " | ".join(f"{row[s]:.3f}" if s in row else "–" for s in sizes) + " |")
        pers = [(m.split(".")[0], s, e["median"]) for (p, m, s), e in sorted(summ.items())
                if p == "ferry-persistent" and m.endswith(".allocs/iter")]
        if pers:
            md.append("| *persistent:* | " + " | ".join("" for _ in sizes) + " |")
            for b in BLOCKING:
                row = {s: v for bb, s, v in pers if bb == b}
                if row:
                    md.append(f"| {b} (persistent) | " + " | ".join(f"{row[s]:.3f}" if s in row else "–"
                                                                for s in sizes) + " |")
        md.append("")
    md += ["## How each figure is measured", "",
           "- **Method (all peers alike)**: OSU's. Blocking: per size, warm-up + iterations (1000 + 100 up to "
           "8 KiB, 100 + 10 above), each call timed alone and followed by an untimed barrier; a rank's latency is "
           "its timed total / iterations; the table shows the average over the ranks (OSU's *Avg Latency*). "
           "Nonblocking: a pure loop (post + wait), then post, busy-compute for the rank's pure time, wait, "
           "barrier; overlap = max(0, 100 · (1 − (overall − compute) / pure)). reduce/allreduce: `f64`/`MPI_DOUBLE` "
           "sums; roots rank 0; allgather and alltoall sizes are per rank.",
           "- **ferry:** `ferry-bench OP` (`benches/src/coll.rs`, `nbc.rs`), `FERRY_DEVICE=shm`, launched by "
           "`ferryrun -n 2 sh -c 'exec taskset -c $PMI_RANK \"$0\" \"$@\"' ferry-bench OP --sizes ...`; "
           "*ferry persistent* adds `--persistent`; *ferry p2p* runs with `FERRY_COLL_NODE=0` (every collective "
           "point-to-point, without the shm device's node collectives); *ferry async* with `FERRY_ASYNC_PROGRESS=1`.",
           "- **MPI peers:** `benches/compare/src/mpi_coll.c` and `mpi_nbc.c`, built with `mpicc.openmpi` and "
           "`mpicc.mpich`. Open MPI: `mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 --bind-to core "
           "--map-by core`, with no MCA options (*defaults*) and with `--mca pml ob1 --mca btl vader,self`; "
           "MPICH: `mpiexec.hydra -n 2 -bind-to core`; UCC: `--mca coll ucc,tuned,libnbc,basic,self --mca "
           "coll_ucc_enable 1 --mca coll_ucc_priority 100`, probed first.",
           "- Raw outputs: `raw/coll/rep<N>/<peer>.<bench>.txt`; every value: `raw/coll/results.csv`; medians and "
           "spreads: `raw/coll/summary.json`; every command, wait and failure: `raw/coll/runs.log`.",
           ""]
    if cmds:
        md += ["First command of each peer, as run (`raw/coll/runs.log` has all):", "", "```"] + \
              [f"{c}" for _, c in cmds[:8]] + ["```", ""]
    with open(os.path.join(out, "collectives.md"), "w") as f:
        f.write("\n".join(md))
    print(f"coll_report.py: wrote {os.path.join(out, 'collectives.md')} ({len(recs)} values, {len(reps)} reps)")
