#!/usr/bin/env python3
"""Instructions per one-way 8 B message, from ferry-instr's callgrind runs.

Usage: report.py DIR [TOP]  (TOP: also list the TOP most expensive
functions of rank 0)

Reads the directory run.sh wrote: for each rank, a sender run (only
`call_isend` collected) and a receiver run (only `call_irecv` and the
`call_test_*` functions collected, with the idle phase dumped apart), plus
the program's output lines; and the same for the blocking slice API
(`bsend`, `brecv`), whose idle rounds are the library's own spins. Prints, per side and for both sides together,
the instructions per message split by where the code lives (its source
file, or for code inlined from the standard library, the function it was
inlined into); idle receive rounds are subtracted at the idle phase's
measured cost per round.
"""
import re
import sys
from pathlib import Path

# Where code lives -> phase. First match wins; paths are matched against the
# source file callgrind reports (inlined code keeps its own file).
FILE_PHASES = [
    (r"/core/src/matching/", "match"),
    (r"/core/src/engine/(mod|incoming)\.rs|/core/src/(wire|envelope)\.rs", "progress"),
    (r"/core/src/engine/(post|outbox)\.rs", "post"),
    (r"/core/src/engine/(complete|request)\.rs|/core/src/(status|slab|handle|buffer)\.rs", "complete"),
    (r"/(shm|ofi|verbs)/src/|/devices/src/select/", "device"),
    (r"/devices/src/(waiter|world)\.rs|/std/src/sys/sync/|/std/src/sync/|/tracing", "lock"),
    (r"/devices/src/", "api"),
    (r"/benches/src/bin/ferry-instr\.rs", "program"),
]
# For code whose file is the standard library (or unknown): the function.
FUNCTION_PHASES = [
    (r"ferry_core::matching", "match"),
    (r"Engine<D>>?::progress|incoming|Header::decode", "progress"),
    (r"ferry_core::engine::post|isend_mode|post_recv|try_eager_now", "post"),
    (r"ferry_core::engine::complete|ferry_core::slab|ferry_core::engine::request", "complete"),
    (r"ferry_shm|ferry_ofi|ferry_verbs|NodeDevice", "device"),
    (r"waiter|Guard|[Mm]utex|futex|tracing", "lock"),
    (r"^ferry::", "api"),
    # Library code (the standard library's slices, options, results) that
    # LTO inlined into a call_* function is the library's cost, not the
    # program's: the program's own lines are only those of ferry-instr.rs
    # (FILE_PHASES). Counting it as "other" errs towards a higher total.
    (r"ferry_instr::", "other"),
    (r"memcpy|memmove|memset", "libc copy"),
    (r"malloc|free|realloc|calloc", "libc alloc"),
]
PHASES = ["api", "lock", "post", "progress", "match", "complete", "device",
          "libc copy", "libc alloc", "program", "other"]
LINE = re.compile(r"^\s*([\d,]+) \([ \d.]+%\)\s+(.*?)(?: \[[^\]]*\])?$")


def phase_of(location):
    path, _, function = location.partition(":")
    if not path.startswith("/rustc/") and path != "???":
        for pattern, phase in FILE_PHASES:
            if re.search(pattern, path):
                return phase
    for pattern, phase in FUNCTION_PHASES:
        if re.search(pattern, function):
            return phase
    return "other"


def self_costs(path):
    """Self cost (Ir) per (source file, function), read from callgrind's
    out file: cost lines count for the current file and function, except
    the line after `calls=`, which is a callee's inclusive cost."""
    names = {}

    def name(kind, value):
        m = re.match(r"\((\d+)\)(?: (.*))?", value)
        if not m:
            return value
        key = (kind, m.group(1))
        if m.group(2) is not None:
            names[key] = m.group(2)
        return names.get(key, value)

    costs = {}
    fl = fi = fn = "???"
    after_call = False
    for line in Path(path).read_text().splitlines():
        if not line:
            continue
        if line.startswith("fl="):
            fl = fi = name("fl", line[3:])
        elif line.startswith(("fi=", "fe=")):
            fi = name("fl", line[3:])
        elif line.startswith("fn="):
            fn = name("fn", line[3:])
            fi = fl
        elif line.startswith(("cfl=", "cfi=")):
            name("fl", line[4:])
        elif line.startswith("cfn="):
            name("fn", line[4:])
        elif line.startswith("calls="):
            after_call = True
        elif line[0].isdigit() or line[0] in "+-*":
            if after_call:
                after_call = False
                continue
            fields = line.split()
            if len(fields) > 1:
                key = f"{fi}:{fn}"
                costs[key] = costs.get(key, 0) + int(fields[1])
    return costs


def by_phase(path):
    phases = dict.fromkeys(PHASES, 0)
    for location, cost in self_costs(path).items():
        phases[phase_of(location)] += cost
    return phases


def counts(log):
    m = re.search(r"messages (\d+) idle_pingpong (\d+) idle_phase (\d+)", log)
    if not m:
        sys.exit(f"no count line in {log!r}")
    return tuple(map(int, m.groups()))


def parts(directory, run, rank):
    """The dump files of one run and rank, in order (part 1 is the warm-up)."""
    files = [p for p in Path(directory).glob(f"{run}.{rank}.*") if p.suffix[1:].isdigit()]
    files.sort(key=lambda p: int(p.suffix[1:]))
    return files + [Path(directory) / f"{run}.{rank}"]


def side(directory, rank, send_run="send", recv_run="recv"):
    log_s = (Path(directory) / f"{send_run}.{rank}.log").read_text()
    log_r = (Path(directory) / f"{recv_run}.{rank}.log").read_text()
    messages, _, _ = counts(log_s)
    received = messages // 2
    send = by_phase(parts(directory, send_run, rank)[-1])
    _, idle_rounds, idle_phase = counts(log_r)
    recv_parts = parts(directory, recv_run, rank)
    idle = by_phase(recv_parts[-2])
    recv = by_phase(recv_parts[-1])
    scale = idle_rounds / idle_phase
    recv_net = {p: recv[p] - scale * idle[p] for p in PHASES}
    per = lambda d, n: {p: d[p] / n for p in PHASES}
    return (per(send, received), per(recv_net, received),
            sum(idle.values()) / idle_phase, idle_rounds / received)


def library(d):
    """The library's share: everything but the measuring program's own code."""
    return sum(v for p, v in d.items() if p != "program")


def row(name, d):
    cells = " | ".join(f"{d[p]:.0f}" for p in PHASES)
    return f"| {name} | {cells} | **{library(d):.0f}** |"


def top(directory, count):
    """The most expensive functions of rank 0's receive and send paths."""
    recv_parts = parts(directory, "recv", 0)
    for title, path in (("send", parts(directory, "send", 0)[-1]), ("receive (idle rounds included)", recv_parts[-1])):
        costs = self_costs(path)
        total = sum(costs.values())
        print(f"\nrank 0, {title}: top functions by self cost (share of {total:,} Ir)")
        for location, cost in sorted(costs.items(), key=lambda kv: -kv[1])[:count]:
            print(f"  {cost / total:6.1%}  {phase_of(location):10} {location}")


def table(directory, runs, names, idle_what):
    sends, recvs, idles, waits = [], [], [], []
    for rank in (0, 1):
        s, r, i, w = side(directory, rank, *runs)
        sends.append(s), recvs.append(r), idles.append(i), waits.append(w)
    mean = lambda ds: {p: sum(d[p] for d in ds) / len(ds) for p in PHASES}
    send, recv = mean(sends), mean(recvs)
    both = {p: send[p] + recv[p] for p in PHASES}
    print("| side | " + " | ".join(PHASES) + " | total (without program) |")
    print("|---|" + "---|" * (len(PHASES) + 1))
    print(row(names[0], send))
    print(row(names[1], recv))
    print(row("both ranks", both))
    print(f"\nidle round ({idle_what}): "
          f"{sum(idles) / 2:.0f} instructions; {sum(waits) / 2:.2f} idle rounds per message subtracted")


def main():
    directory = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    print("Instructions per one-way 8 B message (callgrind, mean of both ranks; "
          "idle receive rounds subtracted)\n")
    print("Nonblocking, owned buffers (isend_buf; irecv_buf + test):\n")
    table(directory, ("send", "recv"), ("sender (isend)", "receiver (irecv + test)"),
          "a test that finds nothing")
    if (Path(directory) / "brecv.0.log").exists():
        print("\nBlocking slices (Comm::send; Comm::recv), as MPI_Send and MPI_Recv:\n")
        table(directory, ("bsend", "brecv"), ("sender (send)", "receiver (recv)"),
              "a spin of a waiting recv")
    print("\nprogram: the measuring program's own code around the calls (not counted in the total)")
    if count:
        top(directory, count)


if __name__ == "__main__":
    main()
