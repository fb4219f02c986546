//! The nonblocking collectives, as OSU's NBC benchmarks measure them
//! (`osu_ibarrier`, `osu_ibcast`, `osu_iallreduce`, `osu_ialltoall`):
//! `ibarrier`, `ibcast`, `iallreduce`, `ialltoall`.
//!
//! Per size, on every rank, two loops of `warm-up + iters` operations:
//! 1. **pure**: post, then `wait` at once; a rank's pure time is the
//!    timed total / `iters`;
//! 2. **overlap**: post, busy-compute for this rank's pure time (a loop of
//!    arithmetic that never calls ferry, so any progress meanwhile is
//!    ferry's own), then `wait`; each operation is followed by an untimed
//!    `barrier`, as in OSU.
//!
//! Columns, each the average over the ranks as OSU prints them:
//! `overall_us` (post + compute + wait), `compute_us`, `pure_us`, and
//! `overlap_pct` = max(0, 100 · (1 − (overall − compute) / pure)), OSU's
//! formula (without its `MPI_Test` calls, which it makes only when asked).
//! ferry has no asynchronous progress thread (yet): what overlaps is what
//! the post itself starts (eager sends) and what the peer delivers into
//! shared memory meanwhile.
//!
//! `ibarrier` adds `wait_cpu_pct`: rank 0 posts an `ibarrier` and waits
//! while rank 1 sleeps `--block-secs` (2 s) before posting its own; the
//! CPU time rank 0's process used meanwhile (`getrusage`, as the `wait`
//! subcommand measures a blocked `recv`), in % of one core. It depends on
//! `--wait-mode` (hybrid by default). `--block-secs 0` skips it (`nan`).
//!
//! `--validate` runs one more, untimed operation per size on fresh inputs
//! and checks every element.
//!
//! The loops allocate nothing themselves: each operation takes the vector
//! the previous completion handed back (`Completion::into_vec`).
//! `allocs/iter` counts post + wait in the pure loop, the largest of the
//! ranks'. Buffers as in [`crate::coll`]: `ibcast` and `ialltoall` move
//! bytes, `iallreduce` is an in-place `f64` sum whose input is written
//! back, untimed, before each post.

use std::hint::black_box;
use std::time::{Duration, Instant};

use ferry::{Comm, Op, Request};
use nix::sys::resource::{getrusage, UsageWho};

use crate::cli::Subcommand;
use crate::coll::{
    alltoall_want, coll_sizes, f64_count, gather, osu_coll_iterations, same_bytes, Timing,
};
use crate::job::{fe, Bench, Sample};
use crate::latency::fill;

/// The columns of `ibcast`, `iallreduce`, `ialltoall`.
const COLUMNS: &[&str] = &["overall_us", "compute_us", "pure_us", "overlap_pct"];

/// `ibarrier`'s: the same and the CPU share of a blocked wait.
const IBARRIER_COLUMNS: &[&str] = &[
    "overall_us",
    "compute_us",
    "pure_us",
    "overlap_pct",
    "wait_cpu_pct",
];

macro_rules! nonblocking {
    ($name:ident, $cmd:literal, $kind:expr, $cols:expr, $about:literal, $sizes:expr) => {
        #[doc = concat!("The `", $cmd, "` subcommand.")]
        pub(crate) const $name: Subcommand = Subcommand {
            name: $cmd,
            about: $about,
            columns: $cols,
            default_sizes: $sizes,
            iterations: osu_coll_iterations,
            counts_allocations: true,
            job_warmup: true,
            multi_pair: false,
            measure: |b, size, iters, warmup| measure(b, $kind, size, iters, warmup),
        };
    };
}

nonblocking!(
    IBARRIER,
    "ibarrier",
    Kind::Ibarrier,
    IBARRIER_COLUMNS,
    "ibarrier: overall/compute/pure us, overlap %, CPU % of a blocked wait, as osu_ibarrier",
    || vec![0]
);
nonblocking!(
    IBCAST,
    "ibcast",
    Kind::Ibcast,
    COLUMNS,
    "ibcast from rank 0: overall/compute/pure us and overlap %, as osu_ibcast",
    || coll_sizes(1)
);
nonblocking!(
    IALLREDUCE,
    "iallreduce",
    Kind::Iallreduce,
    COLUMNS,
    "f64 sum iallreduce: overall/compute/pure us and overlap %, as osu_iallreduce",
    || coll_sizes(8)
);
nonblocking!(
    IALLTOALL,
    "ialltoall",
    Kind::Ialltoall,
    COLUMNS,
    "ialltoall (size: block per rank): overall/compute/pure us, overlap %, as osu_ialltoall",
    || coll_sizes(1)
);

/// Which collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Ibarrier,
    Ibcast,
    Iallreduce,
    Ialltoall,
}

/// The vector an operation works on, between operations.
struct Case {
    kind: Kind,
    op: Op<f64>,
    input: f64,
    bytes: Option<Vec<u8>>,
    floats: Option<Vec<f64>>,
}

impl Case {
    fn new(b: &Bench, kind: Kind, size: usize) -> Result<Case, String> {
        let ranks = b.comm.size() as usize;
        let input = f64::from(b.rank) + 1.0;
        let (bytes, floats) = match kind {
            Kind::Ibarrier => (None, None),
            Kind::Ibcast => (Some(fill(size, b.rank)), None),
            Kind::Ialltoall => (Some(fill(size * ranks, b.rank)), None),
            Kind::Iallreduce => (None, Some(vec![input; f64_count(size)?])),
        };
        Ok(Case {
            kind,
            op: Op::<f64>::sum(),
            input,
            bytes,
            floats,
        })
    }

    /// Untimed, before each post: the in-place sum gets its input back.
    fn prepare(&mut self) {
        if let Some(v) = &mut self.floats {
            v.fill(self.input);
        }
    }

    /// Posts the operation on the vector held between operations.
    #[inline]
    fn post(&mut self, c: &Comm) -> Result<Request, String> {
        let lost = || "buffer lost".to_owned();
        match self.kind {
            Kind::Ibarrier => c.ibarrier(),
            Kind::Ibcast => c.ibcast(self.bytes.take().ok_or_else(lost)?, 0),
            Kind::Ialltoall => c.ialltoall(self.bytes.take().ok_or_else(lost)?),
            Kind::Iallreduce => c.iallreduce(self.floats.take().ok_or_else(lost)?, &self.op),
        }
        .map_err(fe("post"))
    }

    /// Waits for `req` and takes the vector back.
    #[inline]
    fn finish(&mut self, req: &mut Request) -> Result<(), String> {
        let done = req.wait().map_err(fe("wait"))?;
        done.status.ok().map_err(|e| format!("collective: {e}"))?;
        match self.kind {
            Kind::Ibarrier => {}
            Kind::Ibcast | Kind::Ialltoall => {
                self.bytes = Some(done.into_vec().map_err(fe("into_vec"))?);
            }
            Kind::Iallreduce => self.floats = Some(done.into_vec().map_err(fe("into_vec"))?),
        }
        Ok(())
    }

    /// `--validate`: fresh inputs (the root's data, this rank's blocks),
    /// one operation, every element checked.
    fn validate(&mut self, b: &Bench, size: usize) -> Result<(), String> {
        let (rank, ranks) = (b.rank, b.comm.size() as usize);
        match (self.kind, &mut self.bytes) {
            (Kind::Ibcast, Some(v)) => v.copy_from_slice(&fill(size, rank)),
            (Kind::Ialltoall, Some(v)) => v.copy_from_slice(&fill(size * ranks, rank)),
            _ => {}
        }
        self.prepare();
        let mut req = self.post(&b.comm)?;
        self.finish(&mut req)?;
        let want: Vec<u8> = match self.kind {
            Kind::Ibarrier => return Ok(()),
            Kind::Iallreduce => {
                let sum = (ranks * (ranks + 1) / 2) as f64;
                let got = self.floats.as_deref().unwrap_or_default();
                return match got.iter().position(|&x| x != sum) {
                    Some(i) => Err(format!("element {i}: {} (want {sum})", got[i])),
                    None => Ok(()),
                };
            }
            Kind::Ibcast => fill(size, 0),
            Kind::Ialltoall => alltoall_want(size, ranks, rank),
        };
        same_bytes(self.bytes.as_deref().unwrap_or_default(), &want)
    }
}

/// Busy for `d`: arithmetic that never calls ferry (OSU's
/// `dummy_compute`, without its optional `MPI_Test` calls).
fn compute_for(d: Duration) {
    let t = Instant::now();
    let mut x = 1.0f64;
    while t.elapsed() < d {
        for _ in 0..64 {
            x = black_box(x * 1.000_000_1 + 1e-9);
        }
    }
    black_box(x);
}

/// This process's CPU time, user + system (as the `wait` subcommand reads
/// it).
fn cpu_time() -> Result<Duration, String> {
    let u = getrusage(UsageWho::RUSAGE_SELF).map_err(|e| format!("getrusage: {e}"))?;
    let us = |t: nix::sys::time::TimeVal| t.tv_sec() as u64 * 1_000_000 + t.tv_usec() as u64;
    Ok(Duration::from_micros(
        us(u.user_time()) + us(u.system_time()),
    ))
}

/// Rank 0's CPU share while its `ibarrier` wait is blocked for
/// `--block-secs` by rank 1 (`None` on rank 1; NaN when skipped).
fn cpu_while_blocked(b: &Bench) -> Result<Option<f64>, String> {
    let secs = b.options.block_secs;
    if secs <= 0.0 {
        return Ok((b.rank == 0).then_some(f64::NAN));
    }
    b.sync()?;
    let c = &b.comm;
    if b.rank != 0 {
        std::thread::sleep(Duration::from_secs_f64(secs));
        c.ibarrier()
            .and_then(|mut r| r.wait())
            .map_err(fe("ibarrier"))?;
        return Ok(None);
    }
    let (t0, cpu0) = (Instant::now(), cpu_time()?);
    let mut r = c.ibarrier().map_err(fe("ibarrier"))?;
    r.wait().map_err(fe("blocked ibarrier wait"))?;
    let (wall, cpu) = (t0.elapsed(), cpu_time()? - cpu0);
    Ok(Some(100.0 * cpu.as_secs_f64() / wall.as_secs_f64()))
}

fn measure(
    b: &mut Bench,
    kind: Kind,
    size: usize,
    iters: usize,
    warmup: usize,
) -> Result<Option<Sample>, String> {
    if b.options.persistent {
        return Err("--persistent applies to the blocking subcommands only".into());
    }
    let mut case = Case::new(b, kind, size)?;
    let c = b.comm.clone();
    // 1. Pure communication: post + wait.
    let mut pure = Timing::with_capacity(iters);
    for i in 0..warmup + iters {
        case.prepare();
        let (allocs0, t0) = (b.allocs(), Instant::now());
        let mut req = case.post(&c)?;
        case.finish(&mut req)?;
        if i >= warmup {
            pure.record(b, t0, allocs0);
        }
    }
    let pure_us = pure.total * 1e6 / iters as f64;
    let target = Duration::from_secs_f64(pure.total / iters as f64);
    c.barrier().map_err(fe("barrier"))?;
    // 2. Overlap: post, compute for the pure time, wait.
    let (mut overall, mut compute) = (0.0, 0.0);
    for i in 0..warmup + iters {
        case.prepare();
        let t0 = Instant::now();
        let mut req = case.post(&c)?;
        let tc = Instant::now();
        compute_for(target);
        let dc = tc.elapsed().as_secs_f64();
        case.finish(&mut req)?;
        let dt = t0.elapsed().as_secs_f64();
        if i >= warmup {
            overall += dt;
            compute += dc;
        }
        c.barrier().map_err(fe("barrier"))?;
    }
    if b.options.validate {
        case.validate(b, size)
            .map_err(|e| format!("{size} B: validation: {e}"))?;
    }
    let per = |s: f64| s * 1e6 / iters as f64;
    let cpu = if kind == Kind::Ibarrier {
        cpu_while_blocked(b)?
    } else {
        None
    };
    let allocs = pure.allocs as f64 / iters as f64;
    let Some(all) = gather(b, &[per(overall), per(compute), pure_us, allocs])? else {
        return Ok(None);
    };
    let avg = |k: usize| all.iter().map(|v| v[k]).sum::<f64>() / all.len() as f64;
    let (overall, compute, pure) = (avg(0), avg(1), avg(2));
    let overlap = (100.0 * (1.0 - (overall - compute) / pure)).max(0.0);
    let mut sample = vec![overall, compute, pure, overlap];
    if kind == Kind::Ibarrier {
        sample.push(cpu.unwrap_or(f64::NAN));
    }
    if b.allocations.is_some() {
        sample.push(all.iter().map(|v| v[3]).fold(0.0, f64::max));
    }
    Ok(Some(sample))
}
