//! The driver every subcommand shares: start ferry, check the job has two
//! ranks, run each size `--reps` times, print the table, write the JSON.

use std::time::{Duration, Instant};

use ferry::{Comm, Config, Rank, Tag, World};

use crate::cli::{subcommand, Options, Subcommand};
use crate::report::{Report, Row};

/// One size's figures on rank 0, in the subcommand's column order.
pub type Sample = Vec<f64>;

/// Measures one size: `(bench, size, iterations, warm-up)`; rank 0
/// returns the row's columns, rank 1 `None`.
pub type Measure = fn(&mut Bench, usize, usize, usize) -> Result<Option<Sample>, String>;

/// What a subcommand's `measure` gets.
#[derive(Debug)]
pub struct Bench {
    /// This rank's world.
    pub world: World,
    /// `world.world()`.
    pub comm: Comm,
    /// 0 or 1 (any rank for a multi-pair subcommand).
    pub rank: Rank,
    /// The other rank of this rank's pair.
    pub peer: Rank,
    /// Pairs in the job (1 unless multi-pair).
    pub pairs: usize,
    /// The options.
    pub options: Options,
    /// Heap allocations so far, if counted.
    pub allocations: Option<fn() -> u64>,
}

const SYNC: Tag = 0x3fff_0000;

impl Bench {
    /// Both ranks reach this point before either leaves it.
    ///
    /// # Errors
    /// A ferry error, as text.
    pub fn sync(&self) -> Result<(), String> {
        let c = &self.comm;
        let r = if self.is_sender() {
            c.send::<u8>(&[], self.peer, SYNC)
                .and_then(|()| c.recv::<u8>(&mut [], self.peer, SYNC).map(drop))
        } else {
            c.recv::<u8>(&mut [], self.peer, SYNC)
                .and_then(|_| c.send::<u8>(&[], self.peer, SYNC))
        };
        r.map_err(|e| format!("sync: {e}"))
    }

    /// Whether this rank sends in one-directional loops: the first rank of
    /// each pair.
    pub fn is_sender(&self) -> bool {
        (self.rank as usize) < self.pairs
    }

    /// Heap allocations so far (0 if not counted).
    pub fn allocs(&self) -> u64 {
        self.allocations.map_or(0, |f| f())
    }
}

/// The clock and the allocation count of a loop's timed rounds (those
/// after the warm-up): call [`Timed::at`] at the top of every round.
pub(crate) struct Timed {
    warmup: usize,
    t0: Instant,
    allocs0: u64,
}

impl Timed {
    pub(crate) fn new(warmup: usize) -> Timed {
        Timed {
            warmup,
            t0: Instant::now(),
            allocs0: 0,
        }
    }

    /// Round `i` starts: the first timed one restarts the clock and the count.
    #[inline]
    pub(crate) fn at(&mut self, b: &Bench, i: usize) {
        if i == self.warmup {
            self.allocs0 = b.allocs();
            self.t0 = Instant::now();
        }
    }

    /// Seconds since the first timed round, and allocations per timed round.
    pub(crate) fn end(&self, b: &Bench, iters: usize) -> (f64, f64) {
        let elapsed = self.t0.elapsed().as_secs_f64();
        (elapsed, (b.allocs() - self.allocs0) as f64 / iters as f64)
    }
}

/// Turns a ferry error into the driver's error text.
pub fn fe(what: &'static str) -> impl Fn(ferry::Error) -> String {
    move |e| format!("{what}: {e}")
}

fn start(o: &Options) -> Result<World, String> {
    let mut config = Config::from_env().map_err(|e| e.to_string())?;
    if let Some(d) = o.device {
        config.device = d;
    }
    if let Some(m) = o.wait_mode {
        config.wait_mode = m;
    }
    if let Some(us) = o.spin_us {
        config.spin = Duration::from_micros(us);
    }
    // One thread calls ferry here, as in the OSU benchmarks (whose
    // `MPI_Init` asks for MPI_THREAD_SINGLE): no lock, unless the user
    // chose a level or the progress thread needs `multiple`.
    let level_chosen = std::env::var("FERRY_THREAD_LEVEL").is_ok_and(|v| !v.is_empty());
    if !level_chosen && !config.async_progress {
        config.thread_level = ferry::ThreadLevel::Funneled;
    }
    config
        .init()
        .map_err(|e| format!("ferry did not start: {e}"))
}

/// Iterations and warm-up for `size`, from the options or the subcommand.
fn iterations(sub: &Subcommand, o: &Options, size: usize) -> (usize, usize) {
    let (iters, warmup) = (sub.iterations)(size);
    match (o.iters, o.warmup) {
        (Some(i), Some(w)) => (i, w),
        (Some(i), None) => (i, i / 10),
        (None, Some(w)) => (iters, w),
        (None, None) => (iters, warmup),
    }
}

/// Runs the subcommand of `o` as this rank.
///
/// # Errors
/// A message for the user.
pub fn run(o: &Options, allocations: Option<fn() -> u64>) -> Result<(), String> {
    let sub = subcommand(o);
    let world = start(o)?;
    let size = world.size() as usize;
    if sub.multi_pair && (size < 2 || size % 2 != 0) {
        return Err(format!(
            "needs an even number of ranks, got {size} (run it as `ferryrun -n 4 ferry-bench {}` for 2 pairs)",
            sub.name
        ));
    }
    if !sub.multi_pair && size != 2 {
        return Err(format!(
            "needs exactly 2 ranks, got {size} (run it as `ferryrun -n 2 ferry-bench {}`)",
            sub.name
        ));
    }
    let rank = world.rank();
    let pairs = size / 2;
    let peer = if (rank as usize) < pairs {
        rank + pairs as Rank
    } else {
        rank - pairs as Rank
    };
    let mut bench = Bench {
        comm: world.world(),
        peer,
        pairs,
        rank,
        world,
        options: o.clone(),
        allocations,
    };
    let sizes = o.sizes.clone().unwrap_or_else(sub.default_sizes);
    let report = Report::new(sub, &bench, allocations.is_some())?;
    if rank == 0 {
        report.print_header(&sizes, |s| iterations(sub, o, s));
    }
    let mut rows: Vec<Row> = sizes
        .iter()
        .map(|&size| {
            let (iters, warmup) = iterations(sub, o, size);
            Row::new(size, iters, warmup)
        })
        .collect();
    // One untimed pass over the first size: the first row would otherwise
    // absorb the job's start-up (page faults, the peer finishing its own
    // setup), which OSU's per-size warm-up is too short to hide.
    if let Some(row) = rows.first().filter(|_| sub.job_warmup) {
        bench.sync()?;
        (sub.measure)(&mut bench, row.size, row.iters, 0)?;
    }
    // Repetitions outermost (A B C, A B C, ...): a burst of noise on the
    // machine then spreads over sizes instead of spoiling one of them.
    for rep in 0..o.reps {
        for row in &mut rows {
            bench.sync()?;
            if let Some(sample) = (sub.measure)(&mut bench, row.size, row.iters, row.warmup)? {
                row.samples.push(sample);
                if o.reps == 1 {
                    report.print_row(row);
                }
            }
        }
        if rank == 0 && o.reps > 1 {
            eprintln!(
                "ferry-bench {}: repetition {} of {} done",
                sub.name,
                rep + 1,
                o.reps
            );
        }
    }
    if rank == 0 {
        if o.reps > 1 {
            for row in &rows {
                report.print_row(row);
            }
        }
        if let Some(path) = &o.json {
            report.write_json(path, &rows)?;
        }
    }
    bench.world.finalize().map_err(fe("finalize"))
}
