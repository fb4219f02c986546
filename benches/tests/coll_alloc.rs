//! Allocations of an allreduce in steady state, through ferry's API: a
//! persistent round (`allreduce_init` once, then `start` + `wait`) and a
//! blocking round (`Comm::allreduce` on borrowed slices), on 2 ranks, after
//! a warm-up. A counting global allocator, per thread, as in
//! `zero_alloc.rs`.
//!
//! Two ranks in one process (`ferry_bench::inproc`) exist only as core
//! engines: a `ferry::World` comes from a launcher's PMI (or is a singleton,
//! whose collectives complete inside the call). So this test launches
//! itself as a 2-rank job with ferry's launcher ([`ferry_launch::run`]),
//! twice: once with every collective point-to-point (`coll_node` off,
//! `FERRY_COLL_NODE=0`), once through the shm device's node collectives
//! (the default). Each rank is this test binary running only `rank_p2p` or
//! `rank_node`, which counts, checks its own figures and fails (exit code
//! ≠ 0, which fails the job) when they are off. Waiting spins
//! (`WaitMode::Spin`), so that the figures do not depend on whether a wait
//! went to sleep, which a loaded machine decides at random.
//!
//! Node collectives (the default on shared memory): **0** allocations per
//! round, persistent and blocking, asserted. (Until `2855f43` every poll
//! that had to wait allocated a `Vec` in `must_wait`, `shm/src/node`,
//! found by this test.)
//!
//! Point-to-point does not reach zero, so what is asserted there is the
//! measured figures and their sources (found with the recording allocator
//! below):
//! - persistent: one allocation per eager message of more than
//!   [`POOLED_MAX`] bytes that arrived before its receive was posted (the
//!   box around the shm cell that holds it; counted by the engine's
//!   `unexpected_arrivals`), and at most [`GROWTH_MAX`] more. Smaller ones
//!   are copied into the engine's pool of unexpected buffers
//!   (`core/src/engine/small_pool.rs`): 0. How many messages arrive early
//!   is a matter of timing: from 0 to one per round (5000 of 10000 rounds
//!   in some runs). Rendezvous sizes copy nothing: 0 there.
//! - blocking: [`blocking_per_call`] per call (9 for recursive doubling,
//!   11 for Rabenseifner): the schedule `Comm::allreduce` builds every time
//!   (`coll::algo::build`: the builder, its slots, steps, a temporary
//!   vector; the loans of the caller's two slices, `raw::lend` and
//!   `lend_mut`, allocate nothing); plus the early-arrival copies as above;
//!   plus, about once
//!   per 65 calls (up to one per 20 in a debug build), a matching lane:
//!   each call has a new tag, so the engine meets a new (source, tag,
//!   context) key per call, and its lane map keeps 64 spare lanes of the 65
//!   a sweep frees (`matching/lane.rs`; [`CHURN_MAX`] bounds it).
//!
//! `FERRY_ALLOC_BACKTRACE=1 cargo test -p ferry-bench --test coll_alloc`
//! prints the backtraces of the first allocations of each counted part,
//! from a recording allocator, to find where they come from.

use std::alloc::{GlobalAlloc, Layout, System};
use std::backtrace::Backtrace;
use std::cell::{Cell, RefCell};
use std::time::Duration;

use ferry::{Comm, Config, Op, WaitMode, World};

/// The system allocator, counting this thread's allocations and, while
/// recording, keeping their backtraces.
struct Counting;

thread_local! {
    // `const` and without a destructor: usable from inside the allocator.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    // Backtraces still to record in the current part (0: not recording).
    static RECORD: Cell<usize> = const { Cell::new(0) };
    // Set while a backtrace is being taken (it allocates itself).
    static INSIDE: Cell<bool> = const { Cell::new(false) };
    static TRACES: RefCell<Vec<(usize, Backtrace)>> = const { RefCell::new(Vec::new()) };
}

fn count(size: usize) {
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
    let left = RECORD.try_with(Cell::get).unwrap_or(0);
    if left == 0 || INSIDE.try_with(|c| c.replace(true)).unwrap_or(true) {
        return;
    }
    let _ = RECORD.try_with(|c| c.set(left - 1));
    let bt = Backtrace::force_capture();
    let _ = TRACES.try_with(|t| t.borrow_mut().push((size, bt)));
    let _ = INSIDE.try_with(|c| c.set(false));
}

/// This thread's allocations so far.
fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees are this allocator's; the counters
// are thread-local `Cell`s that never allocate, and a backtrace is only
// taken outside another one (`INSIDE`), so the allocator never re-enters
// itself for more than one level.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: forwarded; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: forwarded; the caller upholds `alloc_zeroed`'s contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: forwarded; `ptr` came from this allocator, i.e. `System`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded; `ptr` came from this allocator, i.e. `System`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Rounds before counting, and counted (fewer in a debug build, whose
/// rounds are ten times slower).
const WARMUP: usize = if cfg!(debug_assertions) { 200 } else { 1_000 };
const ROUNDS: usize = if cfg!(debug_assertions) {
    2_000
} else {
    10_000
};
/// Vector sizes in bytes: eager, and rendezvous on the shm device.
const SIZES: [usize; 3] = [8, 1024, 256 << 10];
/// What one blocking `Comm::allreduce` of 2 ranks allocates on the
/// point-to-point path (measured), by vector size: recursive doubling up
/// to 2 KiB, Rabenseifner above (`CollTable::allreduce_short`), whose
/// schedule has more steps and a temporary vector.
fn blocking_per_call(size: usize) -> u64 {
    if size <= 2048 {
        9
    } else {
        11
    }
}
/// The most lane-map churn allowed on top: a new lane about once per 65
/// calls when every receive is posted first (the lane map's sweep), up to
/// one per 20 calls measured in a debug build, whose timing sends more
/// messages early (each early key needs a lane in the unexpected map as
/// well); at most one per 8 calls allowed.
const CHURN_MAX: u64 = ROUNDS as u64 / 8 + 1;

/// Table growth allowed late in a counted part: the engine's request slab,
/// a collective's list of outstanding operations and the matching lanes
/// grow when timing first queues one more entry than ever before, which
/// can happen after any warm-up (measured: 0 to 10 per part).
const GROWTH_MAX: u64 = 32;

/// The largest unexpected eager message the engine keeps in a pooled
/// buffer (`SMALL_MAX` in `core/src/engine/small_pool.rs`).
const POOLED_MAX: usize = 1024;

/// How many backtraces to keep per counted part (`FERRY_ALLOC_BACKTRACE`).
fn backtraces_wanted() -> usize {
    match std::env::var("FERRY_ALLOC_BACKTRACE") {
        Ok(v) if v != "0" => v.parse().unwrap_or(8),
        _ => 0,
    }
}

/// What one counted part did on this rank, over ROUNDS rounds.
#[derive(Debug)]
struct Part {
    /// Heap allocations.
    allocs: u64,
    /// Messages that arrived before their receive was posted (the engine's
    /// `unexpected_arrivals` counter).
    unexpected: u64,
    /// The backtraces of the first allocations (`sample` of them).
    traces: Vec<(usize, Backtrace)>,
}

/// Runs `round` WARMUP + ROUNDS times; counts the last ROUNDS, keeps the
/// backtraces of the first `sample` allocations (more with
/// `FERRY_ALLOC_BACKTRACE`, which also prints them under `what`).
fn counted(world: &World, what: &str, sample: usize, mut round: impl FnMut()) -> Part {
    for _ in 0..WARMUP {
        round();
    }
    TRACES.with(|t| t.borrow_mut().clear());
    let unexpected0 = world.counters().engine.unexpected_arrivals;
    let wanted = backtraces_wanted();
    RECORD.with(|c| c.set(wanted.max(sample)));
    let before = allocations();
    for _ in 0..ROUNDS {
        round();
    }
    let allocs = allocations() - before;
    RECORD.with(|c| c.set(0));
    let unexpected = world.counters().engine.unexpected_arrivals - unexpected0;
    let traces = TRACES.with(|t| std::mem::take(&mut *t.borrow_mut()));
    for (i, (size, bt)) in traces.iter().enumerate().take(wanted) {
        eprintln!(
            "--- {what}: allocation {i} ({size} B):\n{}",
            ferry_frames(bt)
        );
    }
    Part {
        allocs,
        unexpected,
        traces,
    }
}

/// The frames of `bt` in ferry's crates, each with its source line.
fn ferry_frames(bt: &Backtrace) -> String {
    let text = bt.to_string();
    let mut out = String::new();
    let mut keep = false;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("at ") {
            if keep {
                out.push_str(line);
                out.push('\n');
            }
            continue;
        }
        let name = t.split_once(": ").map_or("", |(_, n)| n);
        keep = name.contains("ferry") && !name.contains("coll_alloc::");
        if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// One size on this rank: the persistent part, then the blocking one.
fn one_size(world: &World, comm: &Comm, size: usize, sample: usize) -> (Part, Part) {
    let n = size / 8;
    let op = Op::<f64>::sum();
    let mut req = comm
        .allreduce_init(vec![1.0f64; n], &op)
        .expect("allreduce_init");
    let persistent = counted(world, &format!("persistent {size} B"), sample, || {
        req.start().expect("start");
        let done = req.wait().expect("wait");
        done.status.ok().expect("allreduce status");
    });
    drop(req);
    let send = vec![1.0f64; n];
    let mut recv = vec![0.0f64; n];
    let blocking = counted(world, &format!("blocking {size} B"), sample, || {
        comm.allreduce(&send, &mut recv, &op).expect("allreduce");
    });
    assert!(recv.iter().all(|&x| x == 2.0), "allreduce result");
    (persistent, blocking)
}

/// Checks one size's figures; the failures, as text.
fn check(size: usize, eager: bool, persistent: &Part, blocking: &Part) -> Vec<String> {
    let mut failures = Vec::new();
    // An eager message that arrives before its receive is posted is kept in
    // a pooled buffer up to POOLED_MAX bytes, in its boxed cell above that
    // (one allocation); rendezvous requests carry no data.
    let copies = |p: &Part| {
        if eager && size > POOLED_MAX {
            p.unexpected
        } else {
            0
        }
    };
    let low = copies(persistent);
    if !(low..=low + GROWTH_MAX).contains(&persistent.allocs) {
        failures.push(format!(
            "{size} B persistent: {} allocations over {ROUNDS} rounds, want {low} \
             (one per unexpected eager arrival) + at most {GROWTH_MAX} table growth",
            persistent.allocs
        ));
    }
    let floor = blocking_per_call(size) * ROUNDS as u64 + copies(blocking);
    if !(floor..=floor + CHURN_MAX + GROWTH_MAX).contains(&blocking.allocs) {
        failures.push(format!(
            "{size} B blocking: {} allocations over {ROUNDS} calls, want {} per call \
             + {} unexpected copies + at most {CHURN_MAX} lane churn and {GROWTH_MAX} growth",
            blocking.allocs,
            blocking_per_call(size),
            copies(blocking)
        ));
    }
    failures
}

/// True in a rank that ferry's launcher started.
fn launched() -> bool {
    std::env::var_os("PMI_FD").is_some() || std::env::var_os("PMI_PORT").is_some()
}

/// The node path's check: nothing allocates. On failure, the first
/// sampled allocation's frames say where it comes from.
fn check_node(size: usize, what: &str, part: &Part) -> Option<String> {
    if part.allocs == 0 {
        return None;
    }
    let first = part
        .traces
        .first()
        .map_or_else(String::new, |(_, bt)| ferry_frames(bt));
    Some(format!(
        "{size} B {what}: {} allocations over {ROUNDS} rounds, want 0; the first:\n{first}",
        part.allocs
    ))
}

/// Which way the job's collectives go (`Config::coll_node`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    /// Point-to-point schedules (`FERRY_COLL_NODE=0`).
    PointToPoint,
    /// The shm device's node collectives (the default).
    Node,
}

/// Backtraces sampled per part on the node path.
const NODE_SAMPLE: usize = 64;

/// A rank's body: counts every size on `path`, checks, fails if off.
fn rank_body(path: Path) {
    if !launched() {
        eprintln!("rank: not launched as part of a job; nothing to do");
        return;
    }
    let config = Config {
        wait_mode: WaitMode::Spin,
        coll_node: path == Path::Node,
        ..Config::from_env().expect("FERRY_* settings")
    };
    let world = config.init().expect("ferry init");
    let comm = world.world();
    assert_eq!(comm.size(), 2, "a job of 2 ranks");
    let me = comm.rank();
    let eager_max = world
        .protocol_table(1 - me)
        .expect("protocol table")
        .eager_max;
    let sample = if path == Path::Node { NODE_SAMPLE } else { 0 };
    let mut failures = Vec::new();
    for size in SIZES {
        let (persistent, blocking) = one_size(&world, &comm, size, sample);
        println!(
            "rank {me} {path:?} {size} B over {ROUNDS} rounds: persistent {} allocations \
             ({} unexpected arrivals); blocking {} allocations ({:.3} per call; {} unexpected)",
            persistent.allocs,
            persistent.unexpected,
            blocking.allocs,
            blocking.allocs as f64 / ROUNDS as f64,
            blocking.unexpected
        );
        match path {
            Path::PointToPoint => {
                failures.extend(check(size, size <= eager_max, &persistent, &blocking));
            }
            Path::Node => {
                failures.extend(check_node(size, "persistent", &persistent));
                failures.extend(check_node(size, "blocking", &blocking));
            }
        }
    }
    world.finalize().expect("finalize");
    assert!(
        failures.is_empty(),
        "rank {me}, {path:?}: {} (FERRY_ALLOC_BACKTRACE=1 prints where they come from)",
        failures.join("; ")
    );
}

/// A rank of the point-to-point job of
/// [`allreduce_allocations_in_steady_state`]. Run alone (`cargo test --
/// --ignored`), it has nothing to do.
#[test]
#[ignore = "a rank of allreduce_allocations_in_steady_state's first job"]
fn rank_p2p() {
    rank_body(Path::PointToPoint);
}

/// A rank of the node-collectives job of
/// [`allreduce_allocations_in_steady_state`].
#[test]
#[ignore = "a rank of allreduce_allocations_in_steady_state's second job"]
fn rank_node() {
    rank_body(Path::Node);
}

/// Runs the test `rank_test` of this binary as a job of 2 ranks; its exit
/// code.
fn launch(rank_test: &str) -> i32 {
    let me = std::env::current_exe().expect("the test binary's path");
    let opts = ferry_launch::Options {
        ranks: 2,
        label: true,
        timeout: Some(Duration::from_secs(300)),
        bind_to: ferry_launch::BindTo::Auto,
        map_by: ferry_launch::MapBy::Core,
        report_bindings: false,
        program: me.into_os_string(),
        args: [
            rank_test,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ]
        .iter()
        .map(Into::into)
        .collect(),
    };
    ferry_launch::run(&opts).expect("ferry's launcher starts")
}

#[test]
fn allreduce_allocations_in_steady_state() {
    // One job after the other: two at once would put 4 spinning ranks on
    // what may be 2 cores.
    let p2p = launch("rank_p2p");
    let node = launch("rank_node");
    assert_eq!(
        (p2p, node),
        (0, 0),
        "a rank found allocations off the expected figures, (point-to-point, node) \
         job exit codes (its message is above)"
    );
}

/// The test would pass vacuously if the counter counted nothing.
#[test]
fn the_counter_counts() {
    let before = allocations();
    let v = std::hint::black_box(vec![1u8; 100]);
    assert!(allocations() > before);
    drop(v);
}
