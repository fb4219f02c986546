#!/usr/bin/env python3
"""Aggregate the comparison harness's raw results into docs/perf/.

Usage: report.py [--suite p2p|coll] [--raw DIR] [--out DIR]
  --raw  directory holding rep<N>/<peer>.<bench>.txt (default docs/perf/raw,
         docs/perf/raw/coll for --suite coll)
  --out  where README.md and *.svg go (default docs/perf)
  --suite coll: the collectives instead (run.sh --suite coll): writes
         collectives.md, coll-*.svg, raw/coll/results.csv and summary.json
         (see coll_report.py)

Reads every raw file (ferry-bench format: '#' headers, the last naming the
columns, then rows `size value ...`), takes the median over repetitions, and
writes:
  README.md           tables: latency, bandwidth, message rate, targets
  latency.svg         latency vs size, log-log
  bandwidth.svg       bandwidth vs size, log-log
  raw/results.csv     every value: rep, peer, bench, size, metric, value
  raw/summary.json    median, min, max, n for every (peer, metric, size)
Standard library only.
"""
import argparse
import csv
import datetime
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
from collections import defaultdict

# peer id -> (label, kind); kind: ferry, shm (candidate for best peer), net
PEERS = [
    ("ferry", "ferry (shm, default: CMA chosen by the machine: off under a hypervisor)", "ferry"),
    ("ferry-cma", "ferry (shm, FERRY_SHM_CMA=1)", "ferry-alt"),
    ("ferry-mpi", "ferry's MPI C ABI (libmpi_abi.so.1, the C peers built with its mpicc, shm)", "ferry-alt"),
    ("ompi-vader", "Open MPI ob1+vader", "shm"),
    ("ompi-ucx", "Open MPI pml ucx", "shm"),
    ("mpich", "MPICH (ch4)", "shm"),
    ("ucx-posix-cma", "UCX posix,cma", "shm"),
    ("ucx-sysv", "UCX sysv", "shm"),
    ("fi-shm", "libfabric shm", "shm"),
    ("ucx-tcp", "UCX tcp", "net"),
    ("fi-tcp-rxm", "libfabric tcp;ofi_rxm", "net"),
]
LABEL = {p: l for p, l, _ in PEERS}
KIND = {p: k for p, _, k in PEERS}
SHORT = {
    "ferry": "ferry", "ferry-cma": "ferry CMA", "ferry-mpi": "ferry MPI", "ompi-vader": "OMPI vader",
    "ompi-ucx": "OMPI ucx", "mpich": "MPICH", "ucx-posix-cma": "UCX posix,cma",
    "ucx-sysv": "UCX sysv", "fi-shm": "fi shm", "ucx-tcp": "UCX tcp",
    "fi-tcp-rxm": "fi tcp;rxm",
}
COLORS = {
    "ferry-persistent": "#ff9896", "ompi": "#17becf", "ompi-ucc": "#e377c2",
    "ferry": "#d62728", "ferry-cma": "#ff9896", "ferry-mpi": "#ff7f0e", "ompi-vader": "#1f77b4",
    "ompi-ucx": "#aec7e8", "mpich": "#2ca02c", "ucx-posix-cma": "#9467bd",
    "ucx-sysv": "#c5b0d5", "fi-shm": "#8c564b", "ucx-tcp": "#7f7f7f",
    "fi-tcp-rxm": "#bcbd22",
}


def parse_file(path):
    """-> (columns, rows) where rows = [(size, [values])]"""
    cols, rows = None, []
    with open(path) as f:
        for line in f:
            s = line.strip()
            if not s:
                continue
            if s.startswith("#"):
                toks = s[1:].split()
                if toks and toks[0] == "size":
                    cols = toks[1:]
                continue
            toks = s.split()
            try:
                size = int(toks[0])
                vals = [float(t) for t in toks[1:]]
            except ValueError:
                continue
            rows.append((size, vals))
    return cols or [], rows


def pick(cols, *names):
    for n in names:
        if n in cols:
            return cols.index(n)
    for i, c in enumerate(cols):
        for n in names:
            if n.lower() in c.lower():
                return i
    return None


def load(raw):
    """-> list of (rep, peer, bench, size, metric, value)"""
    out = []
    for rep_dir in sorted(os.listdir(raw)):
        m = re.fullmatch(r"rep(\d+)", rep_dir)
        if not m:
            continue
        rep = int(m.group(1))
        for fn in sorted(os.listdir(os.path.join(raw, rep_dir))):
            m2 = re.fullmatch(r"(.+)\.(lat|bw|mr)\.txt", fn)
            if not m2:
                continue
            peer, bench = m2.groups()
            cols, rows = parse_file(os.path.join(raw, rep_dir, fn))
            if bench == "lat":
                idx = {"lat_us": pick(cols, "avg_us", "latency_us", "us"),
                       "lat_p50_us": cols.index("p50_us") if "p50_us" in cols else None}
            elif bench == "bw":
                idx = {"bw_MBps": pick(cols, "MB/s"), "bw_msgs": pick(cols, "msgs/s", "msg")}
            else:
                idx = {"mr_msgs": pick(cols, "msgs/s", "msg"), "mr_MBps": pick(cols, "MB/s")}
            for size, vals in rows:
                for metric, i in idx.items():
                    if i is not None and i < len(vals):
                        out.append((rep, peer, bench, size, metric, vals[i]))
    return out


def summarize(records):
    vals = defaultdict(list)
    for rep, peer, bench, size, metric, v in records:
        vals[(peer, metric, size)].append(v)
    summ = {k: {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}
            for k, v in vals.items()}
    # rate_msgs: each peer's best windowed message rate, from bw (window 64)
    # or mbw_mr (1 pair, window 64), whichever it has and is higher
    for (p, m, s) in list(summ):
        if m in ("bw_msgs", "mr_msgs"):
            cands = [summ[k] for k in ((p, "bw_msgs", s), (p, "mr_msgs", s)) if k in summ]
            best = max(cands, key=lambda e: e["median"])
            summ[(p, "rate_msgs", s)] = dict(best)
    return summ


def fmt_size(s):
    if s >= 1 << 20 and s % (1 << 20) == 0:
        return f"{s >> 20} MiB"
    if s >= 1024 and s % 1024 == 0:
        return f"{s >> 10} KiB"
    return f"{s} B"


def fmt_num(v, unit):
    if v is None:
        return "–"
    if unit == "us":
        return f"{v:.2f}" if v < 100 else f"{v:.1f}" if v < 1000 else f"{v:.0f}"
    if unit == "GBps":
        return f"{v:.3f}" if v < 1 else f"{v:.2f}"
    if unit == "Mmsgs":
        return f"{v:.2f}"
    return f"{v:g}"


def present_peers(summ, metric):
    ps = {p for (p, m, _) in summ if m == metric}
    return [p for p, _, _ in PEERS if p in ps]


MPI_PEERS = ("ompi-vader", "ompi-ucx", "mpich")


def best_peer(summ, metric, size, lower_better, only=None):
    cands = [(summ[(p, metric, size)]["median"], p) for p, _, k in PEERS
             if k == "shm" and (p, metric, size) in summ and (only is None or p in only)]
    if not cands:
        return None, None
    v, p = (min if lower_better else max)(cands)
    return p, v


def ratio(summ, metric, size, lower_better, who="ferry", only=None):
    f = summ.get((who, metric, size))
    bp, bv = best_peer(summ, metric, size, lower_better, only)
    if f is None or bv is None or bv == 0:
        return None, bp, bv
    return f["median"] / bv, bp, bv


def figure_table(summ, metric, lower_better, unit, scale=1.0):
    peers = present_peers(summ, metric)
    sizes = sorted({s for (p, m, s) in summ if m == metric and p == "ferry"} or
                   {s for (p, m, s) in summ if m == metric})
    head = ["size"] + [SHORT[p] for p in peers] + ["best peer", "ferry / best", "ferry / best MPI"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in sizes:
        r, bp, bv = ratio(summ, metric, s, lower_better)
        cells = [fmt_size(s)]
        for p in peers:
            e = summ.get((p, metric, s))
            txt = fmt_num(e["median"] * scale, unit) if e else "–"
            if p == bp:
                txt = f"**{txt}**"
            cells.append(txt)
        cells.append(SHORT.get(bp, "–") if bp else "–")
        cells.append(f"{r:.2f}" if r is not None else "–")
        r2, _, _ = ratio(summ, metric, s, lower_better, only=MPI_PEERS)
        cells.append(f"{r2:.2f}" if r2 is not None else "–")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def spread_table(summ, metric, unit, scale, peers=("ferry",)):
    """ferry's own spread: median [min–max] over repetitions"""
    sizes = sorted({s for (p, m, s) in summ if m == metric and p in peers})
    head = ["size"] + [f"{SHORT[p]} median [min–max]" for p in peers if any((p, metric, s) in summ for s in sizes)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in sizes:
        cells = [fmt_size(s)]
        for p in peers:
            e = summ.get((p, metric, s))
            if e:
                cells.append(f"{fmt_num(e['median']*scale, unit)} [{fmt_num(e['min']*scale, unit)}–{fmt_num(e['max']*scale, unit)}] (n={e['n']})")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def msgrate_table(summ):
    peers = [p for p, _, _ in PEERS if (p, "bw_msgs", 8) in summ or (p, "mr_msgs", 8) in summ]
    lines = ["| peer | bw window 64, M msg/s | mbw_mr 1 pair, M msg/s | best of both |", "|---|---|---|---|"]
    for p in peers:
        a = summ.get((p, "bw_msgs", 8))
        b = summ.get((p, "mr_msgs", 8))
        c = summ.get((p, "rate_msgs", 8))
        lines.append(f"| {LABEL[p]} | {fmt_num(a['median']/1e6, 'Mmsgs') if a else '–'} | "
                     f"{fmt_num(b['median']/1e6, 'Mmsgs') if b else '–'} | {fmt_num(c['median']/1e6, 'Mmsgs') if c else '–'} |")
    out = "\n".join(lines)
    rows = []
    for metric, name in (("bw_msgs", "bw window 64"), ("mr_msgs", "mbw_mr"), ("rate_msgs", "best of both")):
        r, bp, bv = ratio(summ, metric, 8, False)
        if bp:
            rows.append(f"- {name}: best peer {LABEL[bp]} {bv/1e6:.2f} M msg/s; ferry / best = "
                        + (f"**{r:.2f}**" if r is not None else "– (ferry not measured)"))
    return out + "\n\n" + "\n".join(rows)


def targets(summ):
    def one(metric, size, lower):
        r, bp, bv = ratio(summ, metric, size, lower)
        return r, bp

    def mpi_only(metric, sizes, lower):
        out = []
        for s in sizes:
            r, bp, _ = ratio(summ, metric, s, lower, only=MPI_PEERS)
            if r is not None:
                out.append(f"{fmt_size(s)}: {r:.2f} (vs {SHORT[bp]})")
        return ", ".join(out) or "–"

    rows = []

    def add(fig, target, cmp, limit, parts):
        """parts: list of (size, ratio, bestpeer)"""
        got = [(s, r, bp) for s, r, bp in parts if r is not None]
        if not got:
            rows.append((fig, target, "not measured", "–", "–"))
            return
        worst = max(got, key=lambda t: t[1]) if cmp == "le" else min(got, key=lambda t: t[1])
        ok = all((r <= limit) if cmp == "le" else (r >= limit) for _, r, _ in got)
        detail = ", ".join(f"{fmt_size(s)}: {r:.2f} (vs {SHORT[bp]})" for s, r, bp in got)
        rows.append((fig, target, detail, "**met**" if ok else "missed",
                     mpi_only(parts_metric[0], [s for s, _, _ in got], cmp == "le")))

    parts_metric = ["lat_us"]
    add("latency 8 B (OSU average)", "≤ 0.9 × best peer", "le", 0.9, [(8, *one("lat_us", 8, True))])
    parts_metric[0] = "lat_p50_us"
    add("latency 8 B (per-round-trip p50)", "≤ 0.9 × best peer", "le", 0.9, [(8, *one("lat_p50_us", 8, True))])
    parts_metric[0] = "lat_us"
    add("latency 64 KiB (OSU average)", "≤ 1.0 × best peer", "le", 1.0, [(65536, *one("lat_us", 65536, True))])
    parts_metric[0] = "lat_p50_us"
    add("latency 64 KiB (per-round-trip p50)", "≤ 1.0 × best peer", "le", 1.0, [(65536, *one("lat_p50_us", 65536, True))])
    sizes = sorted({s for (p, m, s) in summ if m == "bw_MBps" and p == "ferry" and 65536 <= s <= 1 << 20})
    parts_metric[0] = "bw_MBps"
    add("bandwidth 64 KiB to 1 MiB", "≥ 1.1 × best peer", "ge", 1.1, [(s, *one("bw_MBps", s, False)) for s in sizes])
    add("bandwidth 4 MiB", "≥ 1.0 × best peer", "ge", 1.0, [(4 << 20, *one("bw_MBps", 4 << 20, False))])
    parts_metric[0] = "rate_msgs"
    add("message rate 8 B (window 64; best of bw and mbw_mr for each)", "≥ 1.2 × best peer", "ge", 1.2,
        [(8, *one("rate_msgs", 8, False))])
    rows.append(("passive wait", "< 2% of a core blocked; median wake-up < 30 µs",
                 "not measured by this harness (see `ferry-bench wait`)", "–", "–"))
    lines = ["| figure | ferry target | measured ferry / best peer | | ferry / best MPI peer (same osu-style program) |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append("| " + " | ".join(r) + " |")
    return "\n".join(lines)


# ---------------------------------------------------------------- SVG plots
def svg_plot(path, title, ylabel, summ, metric, scale=1.0, ylog=True, peers=None, xlabel=None):
    series = []
    for p, label, kind in peers or PEERS:
        pts = sorted((s, summ[(p, m, s)]["median"] * scale) for (pp, m, s) in summ
                     if pp == p and m == metric and s > 0)
        pts = [(s, v) for s, v in pts if v > 0]
        if pts:
            series.append((p, label, kind, pts))
    if not series:
        return False
    W, H, L, R, T, B = 860, 520, 80, 230, 40, 60
    pw, ph = W - L - R, H - T - B
    xs = [s for *_, pts in series for s, _ in pts]
    ys = [v for *_, pts in series for _, v in pts]
    x0, x1 = math.floor(math.log2(min(xs))), math.ceil(math.log2(max(xs)))
    if x1 == x0:
        x1 += 1
    y0, y1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    if y1 == y0:
        y1 += 1

    def X(s):
        return L + (math.log2(s) - x0) / (x1 - x0) * pw

    def Y(v):
        return T + ph - (math.log10(v) - y0) / (y1 - y0) * ph

    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
         'font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{L + pw / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{title}</text>']
    # grid and ticks
    step = 1 if x1 - x0 <= 12 else 2
    for e in range(x0, x1 + 1):
        x = X(2 ** e)
        o.append(f'<line x1="{x:.1f}" y1="{T}" x2="{x:.1f}" y2="{T + ph}" stroke="#e4e4e4"/>')
        if (e - x0) % step == 0:
            o.append(f'<text x="{x:.1f}" y="{T + ph + 16}" text-anchor="middle">{fmt_size(2 ** e).replace(" ", "")}</text>')
    for e in range(y0, y1 + 1):
        y = Y(10 ** e)
        o.append(f'<line x1="{L}" y1="{y:.1f}" x2="{L + pw}" y2="{y:.1f}" stroke="#cfcfcf"/>')
        lab = f"{10 ** e:g}" if -3 <= e <= 6 else f"1e{e}"
        o.append(f'<text x="{L - 6}" y="{y + 4:.1f}" text-anchor="end">{lab}</text>')
        if e < y1:
            for k in range(2, 10):
                yy = Y(k * 10 ** e)
                o.append(f'<line x1="{L}" y1="{yy:.1f}" x2="{L + pw}" y2="{yy:.1f}" stroke="#f2f2f2"/>')
    o.append(f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>')
    o.append(f'<text x="{L + pw / 2}" y="{H - 18}" text-anchor="middle">{xlabel or "message size (bytes, log scale)"}</text>')
    o.append(f'<text transform="translate(20,{T + ph / 2}) rotate(-90)" text-anchor="middle">{ylabel} (log scale)</text>')
    # series
    for i, (p, label, kind, pts) in enumerate(series):
        c = COLORS.get(p, "#000")
        wdt = 3 if kind == "ferry" else 1.6
        dash = ' stroke-dasharray="6,4"' if kind in ("net", "ferry-alt") else ""
        d = " ".join(f"{'M' if j == 0 else 'L'}{X(s):.1f},{Y(v):.1f}" for j, (s, v) in enumerate(pts))
        o.append(f'<path d="{d}" fill="none" stroke="{c}" stroke-width="{wdt}"{dash}><title>{label}</title></path>')
        for s, v in pts:
            o.append(f'<circle cx="{X(s):.1f}" cy="{Y(v):.1f}" r="{3.5 if kind == "ferry" else 2.5}" fill="{c}">'
                     f'<title>{label}: {fmt_size(s)} = {v:.4g}</title></circle>')
        ly = T + 12 + i * 20
        o.append(f'<line x1="{L + pw + 14}" y1="{ly}" x2="{L + pw + 44}" y2="{ly}" stroke="{c}" stroke-width="{wdt}"{dash}/>')
        o.append(f'<text x="{L + pw + 50}" y="{ly + 4}">{label}</text>')
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")
    return True


def machine_info():
    info = []
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.*)", f.read())
            if m:
                info.append(m.group(1).strip())
    except OSError:
        pass
    info.append(f"{os.cpu_count()} CPUs")
    info.append(platform.release())
    vers = []
    for cmd in (["dpkg-query", "-W", "-f", "${Package} ${Version}\\n", "openmpi-bin", "mpich", "ucx-utils", "libfabric-bin"],):
        try:
            vers = subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.split("\n")
        except Exception:
            pass
    return ", ".join(info), [v for v in vers if v.strip()]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    ap = argparse.ArgumentParser()
    ap.add_argument("--raw", default=os.path.join(root, "docs/perf/raw"))
    ap.add_argument("--out", default=os.path.join(root, "docs/perf"))
    ap.add_argument("--note", default="")
    ap.add_argument("--suite", default="p2p", choices=("p2p", "coll"))
    a = ap.parse_args()
    if a.suite == "coll":
        sys.dont_write_bytecode = True  # no __pycache__ beside the sources
        import coll_report
        raw = a.raw if a.raw != os.path.join(root, "docs/perf/raw") else os.path.join(root, "docs/perf/raw/coll")
        coll_report.main(raw, a.out, a.note)
        return
    recs = load(a.raw)
    if not recs:
        sys.exit(f"report.py: no results under {a.raw}")
    summ = summarize(recs)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.raw, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["rep", "peer", "bench", "size", "metric", "value"])
        w.writerows(recs)
    with open(os.path.join(a.raw, "summary.json"), "w") as f:
        json.dump([{"peer": p, "metric": m, "size": s, **v} for (p, m, s), v in sorted(summ.items())], f, indent=1)
    reps = sorted({r[0] for r in recs})
    noisy = 0
    log_path = os.path.join(a.raw, "runs.log")
    if os.path.exists(log_path):
        with open(log_path) as f:
            txt = f.read()
        noisy = txt.count("NOISY:")
        failed = [l.split(" ", 1)[1] for l in txt.splitlines() if "FAILED" in l]
    else:
        failed = []
    have_lat = svg_plot(os.path.join(a.out, "latency.svg"), "One-way latency vs message size (median over repetitions)",
                        "latency, µs", summ, "lat_us")
    have_bw = svg_plot(os.path.join(a.out, "bandwidth.svg"), "Uni-directional bandwidth, window 64 (median over repetitions)",
                       "bandwidth, GB/s", summ, "bw_MBps", scale=1e-3)
    mach, vers = machine_info()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")

    def headline():
        rows = [("latency 8 B (OSU avg)", "lat_us", 8, True, "µs", 1),
                ("latency 8 B (p50)", "lat_p50_us", 8, True, "µs", 1),
                ("latency 64 KiB (OSU avg)", "lat_us", 65536, True, "µs", 1),
                ("latency 64 KiB (p50)", "lat_p50_us", 65536, True, "µs", 1),
                ("bandwidth 1 MiB", "bw_MBps", 1 << 20, False, "GB/s", 1e-3),
                ("bandwidth 4 MiB", "bw_MBps", 4 << 20, False, "GB/s", 1e-3),
                ("message rate 8 B (bw, window 64)", "bw_msgs", 8, False, "M msg/s", 1e-6),
                ("message rate 8 B (best of bw, mbw_mr)", "rate_msgs", 8, False, "M msg/s", 1e-6)]
        out = ["| figure | ferry | ferry with CMA forced | best peer | ferry / best |", "|---|---|---|---|---|"]
        for name, m, s, low, unit, sc in rows:
            f = summ.get(("ferry", m, s))
            g = summ.get(("ferry-cma", m, s))
            r, bp, bv = ratio(summ, m, s, low)
            out.append(f"| {name} | {f['median']*sc:.3g} {unit} | " if f else f"| {name} | – | ")
            out[-1] += (f"{g['median']*sc:.3g} {unit} | " if g else "– | ")
            out[-1] += (f"{bv*sc:.3g} {unit} ({LABEL[bp]}) | " if bp else "– | ")
            out[-1] += (f"**{r:.2f}** |" if r is not None else "– |")
        return "\n".join(out)

    md = [
        "# ferry performance: side by side with Open MPI, MPICH, UCX and libfabric",
        "",
        f"Generated by `ci/compare.sh` (`benches/compare/`) on {now}. "
        f"{len(reps)} alternating repetition(s) (every peer runs once per repetition, in turn); "
        "every figure is the **median over repetitions**. 2 ranks pinned to cores 0 and 1.",
        "",
        f"Machine: {mach}." + (" Packages: " + "; ".join(vers) + "." if vers else ""),
        "",
    ]
    if a.note:
        md += [a.note, ""]
    if noisy:
        md += [f"**Noise warning:** {noisy} run(s) started while the machine was still busy "
               "(wait_quiet gave up waiting; see `raw/runs.log`). Ratios measured side by side stay "
               "meaningful; absolute figures may be inflated.", ""]
    if failed:
        md += ["Runs that failed (see `raw/runs.log`):", ""] + [f"- `{x}`" for x in failed[:20]] + [""]
    spread_notes = []
    for (p, m, sz), e in sorted(summ.items()):
        if p in ("ferry", "ferry-cma") and (m, sz) in (("lat_p50_us", 8), ("lat_p50_us", 65536), ("bw_MBps", 1 << 20),
                                                        ("rate_msgs", 8)) \
                and e["n"] > 1 and e["min"] > 0 and e["max"] / e["min"] > 1.8:
            unit, sc = {"lat_p50_us": ("µs", 1), "bw_MBps": ("GB/s", 1e-3), "rate_msgs": ("M msg/s", 1e-6)}[m]
            spread_notes.append(f"- {LABEL[p]}, {m} at {fmt_size(sz)}: from {e['min']*sc:.3g} to {e['max']*sc:.3g} {unit} "
                                f"across repetitions (median {e['median']*sc:.3g}); see `raw/results.csv`.")
    if spread_notes:
        md += ["**Spread between launches** (max/min over repetitions above 1.8; each repetition is a fresh launch, "
               "so this is run-to-run variation, not noise inside one run):", ""] + spread_notes + [""]
    md += [
        "Ratios: **ferry / best peer**, where the best peer is the best of the shared-memory peers "
        "(Open MPI ob1+vader, Open MPI pml ucx, MPICH, UCX posix,cma and sysv, libfabric shm). "
        "Network peers (UCX tcp, libfabric tcp;ofi_rxm) are shown for reference, as the floor for a future "
        "ofi device, and are never the best peer. For latency lower is better (ratio < 1 means ferry is faster); "
        "for bandwidth and message rate higher is better (ratio > 1 means ferry is faster). "
        "The best peer's figure is in bold.",
        "",
        "## Headline",
        "",
        headline(),
        "",
        "## Targets (issue 4)",
        "",
        targets(summ),
        "",
        "## Latency (µs, one-way = round trip / 2; lower is better)",
        "",
    ]
    if have_lat:
        md += ["![latency vs size](latency.svg)", ""]
    md += [figure_table(summ, "lat_us", True, "us"), "",
           "### Latency, per-round-trip median (p50, µs)", "",
           "The OSU figure above is an average, so a single preemption on this shared VM inflates it; "
           "the median of the individual round trips (halved) is robust to that. "
           "libfabric's fi_pingpong reports only an average, so it is absent here.", "",
           figure_table(summ, "lat_p50_us", True, "us"), "",
           "## Bandwidth (GB/s = 10^9 B/s, window 64, osu_bw style; higher is better)", ""]
    if have_bw:
        md += ["![bandwidth vs size](bandwidth.svg)", ""]
    md += [figure_table(summ, "bw_MBps", False, "GBps", 1e-3), "",
           "## Message rate at 8 B (M messages/s; higher is better)", "",
           msgrate_table(summ), "",
           "## ferry's spread over repetitions", "",
           "Latency (OSU average, µs):", "",
           spread_table(summ, "lat_us", "us", 1, ("ferry", "ferry-cma")), "",
           "Bandwidth (GB/s):", "",
           spread_table(summ, "bw_MBps", "GBps", 1e-3, ("ferry", "ferry-cma")), "",
           "## How each figure is measured", "",
           "- **ferry:** `ferryrun -n 2 sh -c 'exec taskset -c $PMI_RANK ...' target/release/ferry-bench latency|bw|mbw-mr --sizes ...`, "
           "`FERRY_DEVICE=shm`, and again with `FERRY_SHM_CMA=0`. Latency: `avg_us` column; bandwidth: `MB/s`; message rate: `msgs/s`.",
           "- **Open MPI / MPICH:** this project's OSU-style C programs in `benches/compare/src/` "
           "(`mpi_latency`, `mpi_bw`, `mpi_mbw_mr`), built with `mpicc.openmpi` / `mpicc.mpich`. "
           "Open MPI: `mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 --bind-to core --map-by core` with "
           "`--mca pml ob1 --mca btl self,vader`, and with `--mca pml ucx`. MPICH: `mpiexec.hydra -n 2 -bind-to core`. "
           "Same figures as osu_latency (elapsed / 2·iters) and osu_bw (bytes·window·iters / elapsed), OSU's iteration counts.",
           "- **UCX:** `ucx_perftest -t tag_lat|tag_bw -f`, server `taskset -c 0`, client `taskset -c 1` on localhost, "
           "`UCX_TLS=posix,cma`, `sysv`, `tcp`; latency = `overall_lat`, bandwidth = `overall_bw` (MiB/s converted to MB/s), "
           "message rate = `overall_mr`.",
           "- **libfabric:** `fi_pingpong -e rdm -m tagged` with `-p shm` and `-p 'tcp;ofi_rxm'`, server/client pinned as above; "
           "`usec/xfer`. fi_pingpong has no warm-up, so its connection setup falls inside the timing.",
           "- **Like for like:** ferry-bench and the three MPI peers run the same osu-style loops (window 64 + ack for bandwidth), "
           "so the *ferry / best MPI* column compares identical methods. `ucx_perftest tag_bw` streams messages "
           "without osu_bw's per-window ack and reports what the sender achieved, so its bandwidth and message rate are "
           "not strictly the same measurement. With `UCX_TLS=sysv` (no CMA) UCX pipelines a copy in and a copy out "
           "through shared memory on both cores, which on this machine beats single-copy CMA for large messages; "
           "ferry's own `FERRY_SHM_CMA=0` path shows the same effect, so those figures are plausible, not an artefact.",
           "- Before every timed run the harness waits until both CPUs were ≥ 90% idle for 0.5 s (`benches/compare/wait_quiet.sh`).",
           "- Raw outputs: `raw/rep<N>/<peer>.<lat|bw|mr>.txt`; every value: `raw/results.csv`; medians and spreads: `raw/summary.json`; "
           "commands and waits: `raw/runs.log`.",
           ""]
    with open(os.path.join(a.out, "README.md"), "w") as f:
        f.write("\n".join(md))
    print(f"report.py: wrote {os.path.join(a.out, 'README.md')} ({len(recs)} values, {len(reps)} reps)")


if __name__ == "__main__":
    main()
