//! The blocking collectives, as the OSU micro-benchmarks measure them
//! (`osu_barrier`, `osu_bcast`, `osu_reduce`, `osu_allreduce`,
//! `osu_allgather`, `osu_alltoall`): `barrier`, `bcast`, `reduce`,
//! `allreduce`, `allgather`, `alltoall`.
//!
//! Per size, on every rank: `warm-up + iters` calls; each call is timed
//! alone and followed by an untimed `barrier` (as OSU does, so that a rank
//! that left early does not run ahead; `barrier` itself has none). A
//! rank's latency is its timed total / `iters`; the row is the average,
//! minimum and maximum of that over the ranks (OSU's three columns), and
//! `p50_us`, the median single call on rank 0, which a noisy machine
//! disturbs less.
//!
//! - `bcast`, `allgather`, `alltoall` move bytes (`u8`); the size is the
//!   message (bcast) or the block per rank (allgather, alltoall), as in OSU.
//! - `reduce` and `allreduce` are `f64` sums (the size must be a multiple of
//!   8); roots are rank 0.
//! - Default form: the blocking calls on borrowed slices (`Comm::allreduce`
//!   and the rest), buffers made once per size. `--persistent` measures
//!   the MPI 4.0 persistent form instead (`allreduce_init` and the rest,
//!   then `start` + `wait` per call; the in-place reductions get their
//!   input back, untimed, before each call).
//! - `allocs/iter` (when counted) is the heap allocations per call, the
//!   largest of the ranks', counted around the call only (not the barrier).
//! - `--validate` runs one more, untimed call per size into a poisoned
//!   output and checks every element.

use std::time::Instant;

use ferry::{Comm, Op, Rank, Request};

use crate::cli::Subcommand;
use crate::job::{fe, Bench, Sample};
use crate::latency::fill;
use crate::report::median;

/// OSU's `LARGE_MESSAGE_SIZE` for collectives.
const LARGE: usize = 8192;

/// OSU's collective counts (`COLL_LOOP_*`, `COLL_SKIP_*`): 1000 + 100
/// warm-up, and 100 + 10 above [`LARGE`].
pub(crate) fn osu_coll_iterations(size: usize) -> (usize, usize) {
    if size > LARGE {
        (100, 10)
    } else {
        (1000, 100)
    }
}

/// Powers of two from `from` to 1 MiB, OSU's collective range
/// (`MAX_MSG_SIZE_COLL`).
pub(crate) fn coll_sizes(from: usize) -> Vec<usize> {
    std::iter::successors(Some(from.max(1)), |s| Some(s * 2))
        .take_while(|&s| s <= 1 << 20)
        .collect()
}

/// The columns of the blocking subcommands.
const COLUMNS: &[&str] = &["avg_us", "min_us", "max_us", "p50_us"];

macro_rules! blocking {
    ($name:ident, $cmd:literal, $kind:expr, $about:literal, $sizes:expr) => {
        #[doc = concat!("The `", $cmd, "` subcommand.")]
        pub(crate) const $name: Subcommand = Subcommand {
            name: $cmd,
            about: $about,
            columns: COLUMNS,
            default_sizes: $sizes,
            iterations: osu_coll_iterations,
            counts_allocations: true,
            job_warmup: true,
            multi_pair: false,
            measure: |b, size, iters, warmup| measure(b, $kind, size, iters, warmup),
        };
    };
}

blocking!(
    BARRIER,
    "barrier",
    Kind::Barrier,
    "barrier latency in us (avg, min, max over ranks), as osu_barrier",
    || vec![0]
);
blocking!(
    BCAST,
    "bcast",
    Kind::Bcast,
    "broadcast latency in us from rank 0, as osu_bcast",
    || coll_sizes(1)
);
blocking!(
    REDUCE,
    "reduce",
    Kind::Reduce,
    "f64 sum reduce latency in us to rank 0, as osu_reduce",
    || coll_sizes(8)
);
blocking!(
    ALLREDUCE,
    "allreduce",
    Kind::Allreduce,
    "f64 sum allreduce latency in us, as osu_allreduce",
    || coll_sizes(8)
);
blocking!(
    ALLGATHER,
    "allgather",
    Kind::Allgather,
    "allgather latency in us (size: block per rank), as osu_allgather",
    || coll_sizes(1)
);
blocking!(
    ALLTOALL,
    "alltoall",
    Kind::Alltoall,
    "alltoall latency in us (size: block per rank), as osu_alltoall",
    || coll_sizes(1)
);

/// Which collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Barrier,
    Bcast,
    Reduce,
    Allreduce,
    Allgather,
    Alltoall,
}

/// The value every element of rank `r`'s reduction input holds: the sum
/// over `n` ranks is then `n(n+1)/2`, exact in `f64`.
fn reduce_input(r: Rank) -> f64 {
    f64::from(r) + 1.0
}

/// `size` bytes as `f64` elements.
///
/// # Errors
/// A size that is not a whole number of them.
pub(crate) fn f64_count(size: usize) -> Result<usize, String> {
    if size % 8 != 0 {
        return Err(format!(
            "size {size}: reductions run on f64, so sizes must be multiples of 8"
        ));
    }
    Ok(size / 8)
}

/// One collective's buffers, made once per size, and with `--persistent`
/// its persistent request (which then owns the buffer the call works on).
struct Case {
    kind: Kind,
    rank: Rank,
    ranks: usize,
    size: usize,
    op: Op<f64>,
    /// Byte collectives: the input (bcast: the root's data and everyone's
    /// output).
    send: Vec<u8>,
    /// Byte collectives: the output.
    recv: Vec<u8>,
    /// Reductions: the input.
    fsend: Vec<f64>,
    /// Reductions: the output.
    frecv: Vec<f64>,
    persistent: Option<Request>,
}

impl Case {
    fn new(b: &Bench, kind: Kind, size: usize) -> Result<Case, String> {
        let (c, rank) = (&b.comm, b.rank);
        let ranks = c.size() as usize;
        let n = if matches!(kind, Kind::Reduce | Kind::Allreduce) {
            f64_count(size)?
        } else {
            0
        };
        let mut case = Case {
            kind,
            rank,
            ranks,
            size,
            op: Op::<f64>::sum(),
            send: Vec::new(),
            recv: Vec::new(),
            fsend: vec![reduce_input(rank); n],
            frecv: vec![0.0; n],
            persistent: None,
        };
        match kind {
            Kind::Barrier | Kind::Reduce | Kind::Allreduce => {}
            Kind::Bcast => case.send = fill(size, rank),
            Kind::Allgather => {
                case.send = fill(size, rank);
                case.recv = vec![0; size * ranks];
                case.recv[rank as usize * size..][..size].copy_from_slice(&case.send);
            }
            Kind::Alltoall => {
                case.send = fill(size * ranks, rank);
                case.recv = vec![0; size * ranks];
            }
        }
        if b.options.persistent {
            let op = &case.op;
            let req = match kind {
                Kind::Barrier => c.barrier_init(),
                Kind::Bcast => c.bcast_init(std::mem::take(&mut case.send), 0),
                Kind::Reduce => c.reduce_init(std::mem::take(&mut case.fsend), op, 0),
                Kind::Allreduce => c.allreduce_init(std::mem::take(&mut case.fsend), op),
                // In place: this rank's block already sits at its place.
                Kind::Allgather => c.allgather_init(std::mem::take(&mut case.recv)),
                Kind::Alltoall => c.alltoall_init(std::mem::take(&mut case.send)),
            };
            case.persistent = Some(req.map_err(fe("persistent init"))?);
        }
        Ok(case)
    }

    /// Untimed, before each call: the in-place persistent reductions get
    /// their input back (the last call overwrote it with the sum).
    fn prepare(&mut self) -> Result<(), String> {
        let input = reduce_input(self.rank);
        match (&mut self.persistent, self.kind) {
            (Some(req), Kind::Allreduce) => req.with_buf_mut(|v: &mut [f64]| v.fill(input)),
            (Some(req), Kind::Reduce) if self.rank == 0 => {
                req.with_buf_mut(|v: &mut [f64]| v.fill(input))
            }
            _ => Ok(()),
        }
        .map_err(fe("refill"))
    }

    /// The timed call.
    #[inline]
    fn run(&mut self, c: &Comm) -> Result<(), String> {
        if let Some(req) = &mut self.persistent {
            req.start().map_err(fe("start"))?;
            let done = req.wait().map_err(fe("wait"))?;
            done.status.ok().map_err(|e| format!("collective: {e}"))?;
            return Ok(());
        }
        let op = &self.op;
        match self.kind {
            Kind::Barrier => c.barrier(),
            Kind::Bcast => c.bcast(&mut self.send, 0),
            Kind::Reduce => {
                let recv = (self.rank == 0).then_some(&mut self.frecv[..]);
                c.reduce(&self.fsend, recv, op, 0)
            }
            Kind::Allreduce => c.allreduce(&self.fsend, &mut self.frecv, op),
            Kind::Allgather => c.allgather(&self.send, &mut self.recv),
            Kind::Alltoall => c.alltoall(&self.send, &mut self.recv),
        }
        .map_err(fe("collective"))
    }

    /// `--validate`: poisons the output, runs one call, checks it.
    fn validate(&mut self, c: &Comm) -> Result<(), String> {
        let (rank, ranks, size) = (self.rank, self.ranks, self.size);
        if self.kind == Kind::Barrier {
            return self.run(c);
        }
        // Inputs: fresh, since an in-place call consumed them.
        match (&mut self.persistent, self.kind) {
            (Some(req), Kind::Bcast) => req
                .with_buf_mut(|v: &mut [u8]| {
                    if rank == 0 {
                        v.copy_from_slice(&fill(size, 0));
                    } else {
                        v.fill(0xEE);
                    }
                })
                .map_err(fe("with_buf_mut"))?,
            (Some(req), Kind::Allgather) => req
                .with_buf_mut(|v: &mut [u8]| {
                    v.fill(0xEE);
                    v[rank as usize * size..][..size].copy_from_slice(&fill(size, rank));
                })
                .map_err(fe("with_buf_mut"))?,
            (Some(req), Kind::Alltoall) => req
                .with_buf_mut(|v: &mut [u8]| v.copy_from_slice(&fill(size * ranks, rank)))
                .map_err(fe("with_buf_mut"))?,
            (Some(_), _) => self.prepare()?,
            (None, Kind::Bcast) if rank != 0 => self.send.fill(0xEE),
            (None, Kind::Bcast) => self.send.copy_from_slice(&fill(size, 0)),
            (None, _) => {
                self.recv.fill(0xEE);
                self.frecv.fill(-1.0);
            }
        }
        self.run(c)?;
        let bytes: Vec<u8> = match &self.persistent {
            Some(req) => req.with_buf(|v: &[u8]| v.to_vec()),
            None if self.kind == Kind::Bcast => Ok(self.send.clone()),
            None => Ok(self.recv.clone()),
        }
        .map_err(fe("with_buf"))?;
        let floats: Vec<f64> = match &self.persistent {
            Some(req) if matches!(self.kind, Kind::Reduce | Kind::Allreduce) => req
                .with_buf(|v: &[f64]| v.to_vec())
                .map_err(fe("with_buf"))?,
            _ => self.frecv.clone(),
        };
        let sum = (ranks * (ranks + 1) / 2) as f64;
        let want: Vec<u8> = match self.kind {
            Kind::Barrier => return Ok(()),
            Kind::Reduce if rank != 0 => return Ok(()),
            Kind::Reduce | Kind::Allreduce => {
                return match floats.iter().position(|&x| x != sum) {
                    Some(i) => Err(format!("element {i}: {} (want {sum})", floats[i])),
                    None => Ok(()),
                }
            }
            Kind::Bcast => fill(size, 0),
            Kind::Allgather => (0..ranks).flat_map(|r| fill(size, r as Rank)).collect(),
            Kind::Alltoall => alltoall_want(size, ranks, rank),
        };
        same_bytes(&bytes, &want)
    }
}

/// `--validate`'s verdict on an output.
pub(crate) fn same_bytes(got: &[u8], want: &[u8]) -> Result<(), String> {
    match got.iter().zip(want).position(|(a, b)| a != b) {
        Some(i) => Err(format!("byte {i} of {} is wrong", want.len())),
        None if got.len() != want.len() => Err(format!(
            "{} bytes of output, {} expected",
            got.len(),
            want.len()
        )),
        None => Ok(()),
    }
}

/// What an alltoall of `size`-byte blocks of [`fill`] data leaves at `rank`.
pub(crate) fn alltoall_want(size: usize, ranks: usize, rank: Rank) -> Vec<u8> {
    (0..ranks)
        .flat_map(|r| fill(size * ranks, r as Rank)[rank as usize * size..][..size].to_vec())
        .collect()
}

/// One rank's timed loop: the total, each call, and the allocations.
pub(crate) struct Timing {
    /// Seconds over the timed calls.
    pub(crate) total: f64,
    /// Each timed call, in µs.
    pub(crate) calls: Vec<f64>,
    /// Heap allocations inside the timed calls.
    pub(crate) allocs: u64,
}

impl Timing {
    /// Room for `iters` calls, so that recording them never allocates.
    pub(crate) fn with_capacity(iters: usize) -> Timing {
        Timing {
            total: 0.0,
            calls: Vec::with_capacity(iters),
            allocs: 0,
        }
    }

    /// Records one call that started at `t0` with `allocs0` allocations
    /// so far.
    #[inline]
    pub(crate) fn record(&mut self, b: &Bench, t0: Instant, allocs0: u64) {
        let dt = t0.elapsed().as_secs_f64();
        self.allocs += b.allocs() - allocs0;
        self.total += dt;
        self.calls.push(dt * 1e6);
    }
}

/// Every rank's `values` at rank 0, by rank (`None` elsewhere).
///
/// # Errors
/// A ferry error in the gather.
pub(crate) fn gather(b: &Bench, values: &[f64]) -> Result<Option<Vec<Vec<f64>>>, String> {
    let c = &b.comm;
    let ranks = c.size() as usize;
    if b.rank != 0 {
        c.gather(values, None, 0).map_err(fe("gather"))?;
        return Ok(None);
    }
    let mut all = vec![0.0; values.len() * ranks];
    c.gather(values, Some(&mut all), 0).map_err(fe("gather"))?;
    Ok(Some(
        all.chunks(values.len()).map(<[f64]>::to_vec).collect(),
    ))
}

/// The row: OSU's avg/min/max over the ranks of total/iters, rank 0's
/// median call, and (if counted) the most allocations per call of any
/// rank.
///
/// # Errors
/// A ferry error in the gather.
pub(crate) fn row(b: &Bench, t: &Timing, iters: usize) -> Result<Option<Sample>, String> {
    let latency = t.total * 1e6 / iters as f64;
    let allocs = t.allocs as f64 / iters as f64;
    let Some(all) = gather(b, &[latency, allocs])? else {
        return Ok(None);
    };
    let lat: Vec<f64> = all.iter().map(|v| v[0]).collect();
    let avg = lat.iter().sum::<f64>() / lat.len() as f64;
    let min = lat.iter().copied().fold(f64::INFINITY, f64::min);
    let max = lat.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut sample = vec![avg, min, max, median(&t.calls)];
    if b.allocations.is_some() {
        sample.push(all.iter().map(|v| v[1]).fold(0.0, f64::max));
    }
    Ok(Some(sample))
}

fn measure(
    b: &mut Bench,
    kind: Kind,
    size: usize,
    iters: usize,
    warmup: usize,
) -> Result<Option<Sample>, String> {
    let mut case = Case::new(b, kind, size)?;
    let c = b.comm.clone();
    let mut t = Timing::with_capacity(iters);
    for i in 0..warmup + iters {
        case.prepare()?;
        let (allocs0, t0) = (b.allocs(), Instant::now());
        case.run(&c)?;
        if i >= warmup {
            t.record(b, t0, allocs0);
        }
        if kind != Kind::Barrier {
            c.barrier().map_err(fe("barrier"))?;
        }
    }
    if b.options.validate {
        case.validate(&c)
            .map_err(|e| format!("{size} B: validation: {e}"))?;
    }
    row(b, &t, iters)
}
