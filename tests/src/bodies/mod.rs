//! The conformance bodies: functions every rank of a job runs, given its
//! [`Ctx`].
//!
//! Rules every body keeps, so that it works for any device and any rank
//! count from 2 up:
//! - Ranks pair up as `r` and `r ^ 1` ([`Ctx::partner`]); with an odd
//!   count the last rank only takes part in barriers.
//! - Every byte received is checked against [`pattern`], which depends on
//!   the sender, receiver, tag and round, so a message delivered to the
//!   wrong receive, or stale data, is caught.
//! - Control traffic ([`Ctx::barrier`]) uses tags from [`CONTROL_TAGS`]
//!   up. An ANY_TAG receive would match it, so: only rank 0 posts ANY_TAG
//!   receives while other ranks may be entering a barrier (the barrier
//!   reaches rank 0 only once rank 0 enters it), and no body leaves an
//!   ANY_TAG receive posted across a barrier.
//! - A body decides to skip from what the device reports
//!   ([`World::protocol_table`], the counters), never from its name.
//!
//! Failures are returned as [`Failure`] (with the file and line of the
//! check that failed), which the runner prints before exiting non-zero.

mod collectives;
mod communicators;
mod completion;
pub mod fault;
mod matching;
mod one_sided;
mod overlap;
mod p2p;
mod segmented;
mod stress;

use std::fmt;
use std::time::{Duration, Instant};

use ferry::{Comm, Config, Rank, Tag, World};

pub use collectives::collectives;
pub use communicators::communicators;
pub use completion::{
    arecv_mixed, batched, cancel_recv, get_status_some, persistent, request_empty,
};
pub use matching::{any_source_order, blocking_recv_order, issend_sync, mprobe_threads};
pub use one_sided::one_sided;
pub use overlap::overlap;
pub use p2p::{
    fragmented, p2p_blocking, p2p_nonblocking, protocol_selection, rdma_get, truncation,
};
pub use segmented::segmented;
pub use stress::{hybrid_drives_transfers, passive_wait, threads4, unexpected_flood};

/// The variable that scales the load bodies (see [`Ctx::scale`]).
pub const SCALE_VAR: &str = "FERRY_CONFORMANCE_SCALE";

/// Tags from here up are reserved for control traffic.
pub const CONTROL_TAGS: Tag = 1 << 29;
const BARRIER_CALL: Tag = CONTROL_TAGS;
const BARRIER_IN: Tag = CONTROL_TAGS + 1;
const BARRIER_OUT: Tag = CONTROL_TAGS + 2;

/// What a rank's run of a body concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every check passed.
    Pass,
    /// The device lacks a capability the body needs (the reason says
    /// which, and how it was detected).
    Skip(String),
}

/// A failed check, with where it failed.
#[derive(Debug)]
pub struct Failure(pub String);

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<ferry::Error> for Failure {
    fn from(e: ferry::Error) -> Failure {
        Failure(format!("ferry error: {e} ({e:?})"))
    }
}

impl From<ferry_core::Error> for Failure {
    fn from(e: ferry_core::Error) -> Failure {
        Failure(format!("operation error: {e} ({e:?})"))
    }
}

/// A body's result.
pub type Outcome = Result<Verdict, Failure>;

/// Fails the body with a message and the location of the check.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        // `if !(..)` on a float comparison is what clippy's
        // `neg_cmp_op_on_partial_ord` dislikes; a NaN must fail the check.
        let ok: bool = $cond;
        if !ok {
            return Err($crate::bodies::Failure(format!(
                "{}:{}: check `{}` failed: {}",
                file!(),
                line!(),
                stringify!($cond),
                format!($($fmt)+)
            )));
        }
    };
}

/// What a body gets.
#[derive(Debug)]
pub struct Ctx {
    /// This rank's world.
    pub world: World,
    /// `world.world()`.
    pub comm: Comm,
    /// This rank.
    pub rank: Rank,
    /// The job size.
    pub size: u32,
    /// Capabilities the instantiation guarantees (`FERRY_CONFORMANCE_EXPECT`).
    pub expect: Vec<(String, bool)>,
    /// Multiplies the message and round counts of the load bodies
    /// (`FERRY_CONFORMANCE_SCALE`, default 1; the `#[ignore]`d stress tests
    /// raise it).
    pub scale: usize,
}

impl Ctx {
    /// Wraps a started world.
    pub fn new(world: World, expect: Vec<(String, bool)>) -> Ctx {
        let comm = world.world();
        let scale = std::env::var(SCALE_VAR)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1usize)
            .max(1);
        Ctx {
            scale,
            rank: comm.rank(),
            size: comm.size(),
            comm,
            world,
            expect,
        }
    }

    /// This rank's partner (`rank ^ 1`), if it has one.
    pub fn partner(&self) -> Option<Rank> {
        let p = self.rank ^ 1;
        (p >= 0 && (p as u32) < self.size).then_some(p)
    }

    /// True for the lower rank of a pair (the one that goes first).
    pub fn leads(&self) -> bool {
        self.rank % 2 == 0
    }

    /// A barrier over point-to-point messages, started by rank 0: it
    /// calls everyone in, collects their answers, and releases them. No
    /// barrier message reaches rank 0 before rank 0 itself enters, so rank
    /// 0 may use ANY_TAG receives while the others are already waiting
    /// here; when it returns, no barrier message is in flight to this rank.
    ///
    /// # Errors
    /// Any ferry error.
    pub fn barrier(&self) -> Result<(), Failure> {
        let c = &self.comm;
        if self.rank == 0 {
            for r in 1..self.size as Rank {
                c.send::<u8>(&[], r, BARRIER_CALL)?;
            }
            for r in 1..self.size as Rank {
                c.recv::<u8>(&mut [], r, BARRIER_IN)?;
            }
            for r in 1..self.size as Rank {
                c.send::<u8>(&[], r, BARRIER_OUT)?;
            }
        } else {
            c.recv::<u8>(&mut [], 0, BARRIER_CALL)?;
            c.send::<u8>(&[], 0, BARRIER_IN)?;
            c.recv::<u8>(&mut [], 0, BARRIER_OUT)?;
        }
        Ok(())
    }

    /// The eager limit towards `peer`, as the device and config settled it.
    ///
    /// # Errors
    /// Any ferry error.
    pub fn eager_max(&self, peer: Rank) -> Result<usize, Failure> {
        Ok(self.world.protocol_table(peer)?.eager_max)
    }

    /// The capability the instantiation guarantees, if it says.
    pub fn expected(&self, cap: &str) -> Option<bool> {
        self.expect.iter().find(|(c, _)| c == cap).map(|(_, v)| *v)
    }
}

/// The bytes `from` sends `to` with `tag` in `round`: every byte depends
/// on its offset beyond a period of 256, and on all four inputs.
pub fn pattern(len: usize, from: Rank, to: Rank, tag: Tag, round: usize) -> Vec<u8> {
    let seed = (from as usize)
        .wrapping_mul(0x9e37)
        .wrapping_add((to as usize).wrapping_mul(0x85eb))
        .wrapping_add((tag as usize).wrapping_mul(0xc2b2))
        .wrapping_add(round.wrapping_mul(0x27d4));
    (0..len)
        .map(|i| (i.wrapping_mul(131) ^ (i >> 8) ^ (i >> 16) ^ seed ^ (seed >> 8)) as u8)
        .collect()
}

/// Checks `got` against `want`, reporting the first differing offset.
///
/// # Errors
/// A [`Failure`] naming `what`.
pub fn same_bytes(got: &[u8], want: &[u8], what: &str) -> Result<(), Failure> {
    if got.len() != want.len() {
        return Err(Failure(format!(
            "{what}: {} bytes received, {} expected",
            got.len(),
            want.len()
        )));
    }
    if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
        return Err(Failure(format!(
            "{what}: byte {i} of {} is {:#04x}, expected {:#04x}",
            want.len(),
            got[i],
            want[i]
        )));
    }
    Ok(())
}

/// Polls `f` until it returns `Some` or `limit` passes.
///
/// # Errors
/// Whatever `f` returns, or a [`Failure`] naming `what` on timeout.
pub fn poll_until<T>(
    limit: Duration,
    what: &str,
    mut f: impl FnMut() -> Result<Option<T>, Failure>,
) -> Result<T, Failure> {
    let start = Instant::now();
    loop {
        if let Some(t) = f()? {
            return Ok(t);
        }
        if start.elapsed() > limit {
            return Err(Failure(format!("{what}: nothing after {limit:?}")));
        }
        std::thread::yield_now();
    }
}

/// A body, as the runner calls it.
pub type BodyFn = fn(&Ctx) -> Outcome;

macro_rules! registry {
    ( ; $($body:ident),* $(,)?) => {
        /// Every conformance body, by name.
        pub const BODIES: &[(&str, BodyFn)] = &[$((stringify!($body), $body)),*];
    };
}
crate::__with_conformance_bodies!(registry;);

/// Adjusts the configuration a body runs with, before `init` (the
/// instantiation's variables are already in `config`).
pub fn configure(body: &str, config: &mut Config) {
    match body {
        // The sleep path is what this body checks.
        "passive_wait" => {
            config.wait_mode = ferry::WaitMode::Passive;
            config.spin = Duration::ZERO;
        }
        // Hybrid waiting with the default budget is what this body checks.
        "hybrid_drives_transfers" => {
            config.wait_mode = ferry::WaitMode::Hybrid;
            config.spin = Duration::from_micros(50);
        }
        // Open a fragmented range below 1 MiB even when the device has
        // RDMA, so the pipelined copy is exercised on every device.
        "fragmented" => config.engine.rdma_threshold = 1 << 20,
        // The progress thread is what this body measures; setting the
        // variable (to 0, say) measures without it.
        "overlap" if std::env::var_os("FERRY_ASYNC_PROGRESS").is_none_or(|v| v.is_empty()) => {
            config.async_progress = true;
        }
        _ => {}
    }
}
