//! The OSU one-sided set over ferry's Rust API: `put-latency`,
//! `get-latency`, `acc-latency`, `get-acc-latency`, `fop-latency`,
//! `cas-latency`, `put-bw`, `get-bw` and `put-bibw`, with OSU's
//! synchronization choices (`--sync`):
//!
//! - `flush` (default): rank 0 locks rank 1 (shared) once, then each
//!   iteration is one operation and a flush;
//! - `flush_local`: the same with `flush_local` (ferry's flush, which is
//!   stronger);
//! - `lock_all`: each iteration is `lock_all`, the operation, `unlock_all`;
//! - `lock`: each iteration is a shared lock of rank 1, the operation, the
//!   unlock;
//! - `fence`: each iteration is the operation between two fences of both
//!   ranks (rank 0 operates);
//! - `pscw`: rank 1 posts and waits, rank 0 starts, operates and
//!   completes.
//!
//! Latency is the timed loop's time per iteration (µs), with the median
//! of the iterations timed one by one beside it. The bandwidth
//! subcommands do `--window` (64) operations per iteration before its
//! synchronization (`put-bibw`: both ranks, fence by default) and report
//! MB/s. The window is `win_allocate`'s: on one node, a node window
//! (loads and stores in shared memory); `--private` measures
//! `win_allocate_private`'s, whose every operation is a message.
//! Operations use the forms that complete in their call where there are
//! some (`get_now`, `fetch_and_op_now`, ...): the allocation column shows
//! the hot path's heap allocations per iteration.

use std::time::Instant;

use ferry::rma::{Combine, LockKind, Window};
use ferry::Op;

use crate::cli::{powers_of_two, Subcommand};
use crate::job::{fe, Bench, Sample, Timed};
use crate::latency::LARGE;
use crate::report::{median, ALLOCS};

/// An operation the subcommands time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Put,
    Get,
    Acc,
    GetAcc,
    Fop,
    Cas,
}

/// A `--sync` choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sync {
    Flush,
    FlushLocal,
    LockAll,
    Lock,
    Fence,
    Pscw,
}

fn sync_of(b: &Bench, default: Sync) -> Result<Sync, String> {
    Ok(match b.options.sync.as_deref() {
        None => default,
        Some("flush") => Sync::Flush,
        Some("flush_local") => Sync::FlushLocal,
        Some("lock_all") => Sync::LockAll,
        Some("lock") => Sync::Lock,
        Some("fence") => Sync::Fence,
        Some("pscw") => Sync::Pscw,
        Some(s) => {
            return Err(format!(
                "--sync {s}: one of flush, flush_local, lock_all, lock, fence, pscw"
            ))
        }
    })
}

/// OSU's one-sided latency counts: 10000 + 100, 1000 + 10 above 8 KiB.
fn latency_iterations(size: usize) -> (usize, usize) {
    if size > LARGE {
        (1000, 10)
    } else {
        (10_000, 100)
    }
}

macro_rules! latency_subcommand {
    ($const:ident, $name:literal, $about:literal, $sizes:expr, $kind:expr) => {
        pub(crate) const $const: Subcommand = Subcommand {
            name: $name,
            about: $about,
            columns: &["avg_us", "p50_us"],
            default_sizes: $sizes,
            iterations: latency_iterations,
            counts_allocations: true,
            job_warmup: false,
            multi_pair: false,
            measure: |b, size, iters, warmup| latency(b, size, iters, warmup, $kind),
        };
    };
}

latency_subcommand!(
    PUT_LATENCY,
    "put-latency",
    "one-sided put latency in us (an operation and its synchronization), as osu_put_latency",
    || powers_of_two(1),
    Kind::Put
);
latency_subcommand!(
    GET_LATENCY,
    "get-latency",
    "one-sided get latency in us, as osu_get_latency",
    || powers_of_two(1),
    Kind::Get
);
latency_subcommand!(
    ACC_LATENCY,
    "acc-latency",
    "accumulate (sum of doubles) latency in us, as osu_acc_latency",
    || powers_of_two(8),
    Kind::Acc
);
latency_subcommand!(
    GET_ACC_LATENCY,
    "get-acc-latency",
    "get-accumulate (sum of doubles) latency in us, as osu_get_acc_latency",
    || powers_of_two(8),
    Kind::GetAcc
);
latency_subcommand!(
    FOP_LATENCY,
    "fop-latency",
    "fetch-and-op (sum of one u64) latency in us, as osu_fop_latency",
    || vec![8],
    Kind::Fop
);
latency_subcommand!(
    CAS_LATENCY,
    "cas-latency",
    "compare-and-swap (one u64) latency in us, as osu_cas_latency",
    || vec![8],
    Kind::Cas
);

macro_rules! bw_subcommand {
    ($const:ident, $name:literal, $about:literal, $kind:expr, $both:expr) => {
        pub(crate) const $const: Subcommand = Subcommand {
            name: $name,
            about: $about,
            columns: &["MB/s", "p50_MB/s"],
            default_sizes: || powers_of_two(1),
            // osu_put_bw: 100 iterations + 10 warm-up, 20 + 2 above 8 KiB.
            iterations: |size| if size > LARGE { (20, 2) } else { (100, 10) },
            counts_allocations: true,
            job_warmup: false,
            multi_pair: false,
            measure: |b, size, iters, warmup| bandwidth(b, size, iters, warmup, $kind, $both),
        };
    };
}

bw_subcommand!(
    PUT_BW,
    "put-bw",
    "one-sided put bandwidth in MB/s (--window puts per synchronization), as osu_put_bw",
    Kind::Put,
    false
);
bw_subcommand!(
    GET_BW,
    "get-bw",
    "one-sided get bandwidth in MB/s, as osu_get_bw",
    Kind::Get,
    false
);
bw_subcommand!(
    PUT_BIBW,
    "put-bibw",
    "bidirectional put bandwidth in MB/s (both ranks put), as osu_put_bibw",
    Kind::Put,
    true
);

/// The window a size needs, and the element type its operation uses.
fn element_len<T>(size: usize) -> Result<usize, String> {
    let e = std::mem::size_of::<T>();
    if size % e != 0 || size == 0 {
        return Err(format!("size {size}: a whole number of {e}-byte elements"));
    }
    Ok(size / e)
}

/// One timed loop's figures on this rank.
struct Run {
    elapsed: f64,
    times: Vec<f64>,
    allocs: f64,
}

fn latency(
    b: &mut Bench,
    size: usize,
    iters: usize,
    warmup: usize,
    kind: Kind,
) -> Result<Option<Sample>, String> {
    let sync = sync_of(b, Sync::Flush)?;
    let run = match kind {
        Kind::Put | Kind::Get => timed::<u8>(b, size, 1, iters, warmup, kind, sync, false)?,
        Kind::Acc | Kind::GetAcc => timed::<f64>(b, size, 1, iters, warmup, kind, sync, false)?,
        Kind::Fop | Kind::Cas => timed::<u64>(b, size, 1, iters, warmup, kind, sync, false)?,
    };
    if b.rank != 0 {
        return Ok(None);
    }
    let mut sample = vec![run.elapsed * 1e6 / iters as f64, median(&run.times) * 1e6];
    if b.allocations.is_some() {
        debug_assert_eq!(ALLOCS, "allocs/iter");
        sample.push(run.allocs);
    }
    Ok(Some(sample))
}

fn bandwidth(
    b: &mut Bench,
    size: usize,
    iters: usize,
    warmup: usize,
    kind: Kind,
    both: bool,
) -> Result<Option<Sample>, String> {
    let sync = sync_of(b, if both { Sync::Fence } else { Sync::Flush })?;
    if both && !matches!(sync, Sync::Fence | Sync::Pscw) {
        return Err("put-bibw: --sync fence or pscw".into());
    }
    let window = b.options.window;
    let run = timed::<u8>(b, size, window, iters, warmup, kind, sync, both)?;
    if b.rank != 0 {
        return Ok(None);
    }
    let bytes = (size * window) as f64 * if both { 2.0 } else { 1.0 };
    let rate = |secs: f64| bytes / secs / 1e6;
    let mut sample = vec![rate(run.elapsed / iters as f64), rate(median(&run.times))];
    if b.allocations.is_some() {
        sample.push(run.allocs);
    }
    Ok(Some(sample))
}

/// Times `iters` iterations (after `warmup`) of `per` operations of
/// `kind` on `size` bytes and their synchronization, then as many again
/// timed one by one; checks the result under `--validate`.
#[allow(clippy::too_many_arguments)]
fn timed<T: Num>(
    b: &Bench,
    size: usize,
    per: usize,
    iters: usize,
    warmup: usize,
    kind: Kind,
    sync: Sync,
    both: bool,
) -> Result<Run, String> {
    let len = element_len::<T>(size)?;
    let c = &b.comm;
    let win: Window<T> = if b.options.private {
        c.win_allocate_private(len)
    } else {
        c.win_allocate(len)
    }
    .map_err(fe("win_allocate"))?;
    let peer = b.peer;
    let active = b.rank == 0 || both;
    let data: Vec<T> = vec![T::from(1); len];
    let mut out: Vec<T> = vec![T::default(); len];
    let sum = Op::<T>::sum();
    let mut op = |w: &Window<T>| -> ferry::Result<()> {
        match kind {
            Kind::Put => w.put(peer, 0, &data),
            Kind::Get => w.get_now(peer, 0, &mut out),
            Kind::Acc => w.accumulate(peer, 0, &data, Combine::Op(&sum)),
            Kind::GetAcc => w.get_accumulate_now(peer, 0, &data, &mut out, Combine::Op(&sum)),
            Kind::Fop => w
                .fetch_and_op_now(peer, 0, data[0], Combine::Op(&sum))
                .map(drop),
            Kind::Cas => w
                .compare_and_swap_now(peer, 0, T::default(), data[0])
                .map(drop),
        }
    };
    let target = LockKind::Shared;
    // The epoch the flush choices keep open across the loop.
    let held = matches!(sync, Sync::Flush | Sync::FlushLocal) && active;
    if held {
        win.start_lock(peer, target).map_err(fe("lock"))?;
    }
    let mut iteration = |w: &Window<T>| -> ferry::Result<()> {
        let ops = |w: &Window<T>, op: &mut dyn FnMut(&Window<T>) -> ferry::Result<()>| {
            (0..per).try_for_each(|_| op(w))
        };
        match sync {
            Sync::Flush | Sync::FlushLocal => {
                if active {
                    ops(w, &mut op)?;
                    w.flush(peer)?;
                }
            }
            Sync::LockAll => {
                if active {
                    w.start_lock_all()?;
                    ops(w, &mut op)?;
                    w.end_lock_all()?;
                }
            }
            Sync::Lock => {
                if active {
                    w.start_lock(peer, target)?;
                    ops(w, &mut op)?;
                    w.end_lock(peer)?;
                }
            }
            Sync::Fence => {
                w.fence()?;
                if active {
                    ops(w, &mut op)?;
                }
                w.fence()?;
            }
            Sync::Pscw => {
                if both || b.rank == 1 {
                    w.post(&[peer])?;
                }
                if active {
                    w.start(&[peer])?;
                    ops(w, &mut op)?;
                    w.complete()?;
                }
                if both || b.rank == 1 {
                    w.wait()?;
                }
            }
        }
        Ok(())
    };
    b.sync()?;
    let mut clock = Timed::new(warmup);
    for i in 0..warmup + iters {
        clock.at(b, i);
        iteration(&win).map_err(fe("operation"))?;
    }
    let (elapsed, allocs) = clock.end(b, iters);
    let mut times = Vec::with_capacity(iters);
    for _ in 0..iters {
        let a = Instant::now();
        iteration(&win).map_err(fe("operation"))?;
        times.push(a.elapsed().as_secs_f64());
    }
    if held {
        win.end_lock(peer).map_err(fe("unlock"))?;
    }
    b.sync()?;
    if b.options.validate {
        let rounds = (warmup + 2 * iters) * per;
        validate(b, &win, kind, rounds, both).map_err(|e| format!("--validate: {e}"))?;
    }
    win.free().map_err(fe("win_free"))?;
    Ok(Run {
        elapsed,
        times,
        allocs,
    })
}

/// The element types the subcommands use, read as numbers to check.
trait Num: ferry::Reducible + Default + From<u8> + PartialEq {
    fn value(self) -> f64;
}

impl Num for u8 {
    fn value(self) -> f64 {
        f64::from(self)
    }
}

impl Num for u64 {
    fn value(self) -> f64 {
        self as f64
    }
}

impl Num for f64 {
    fn value(self) -> f64 {
        self
    }
}

/// What the target's window holds after `rounds` operations of `kind`
/// (each writing, swapping in or adding 1s), checked where it lies: on
/// rank 1, and rank 0 too if both operated.
fn validate<T: Num>(
    b: &Bench,
    win: &Window<T>,
    kind: Kind,
    rounds: usize,
    both: bool,
) -> Result<(), String> {
    if b.rank != 1 && !both {
        return Ok(());
    }
    let want = match kind {
        Kind::Put | Kind::Cas => 1.0,
        Kind::Acc | Kind::GetAcc | Kind::Fop => rounds as f64,
        Kind::Get => 0.0,
    };
    // A fetch-and-op or compare-and-swap touches the first element only.
    let touched = |v: &[T]| match kind {
        Kind::Fop | Kind::Cas => v.len().min(1),
        _ => v.len(),
    };
    let ok = win
        .local(|v| v[..touched(v)].iter().all(|&x| x.value() == want))
        .map_err(fe("local"))?;
    if !ok {
        let first = win
            .local(|v| v.first().map(|&x| x.value()))
            .map_err(fe("local"))?;
        return Err(format!(
            "rank {}: the window does not hold {want} everywhere (its first element: {first:?})",
            b.rank
        ));
    }
    Ok(())
}
