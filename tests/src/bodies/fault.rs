//! Failure scenarios: a rank dies by SIGKILL, and its peers' waits must
//! return an error instead of hanging. Run by `tests/failure.rs` through
//! `ferry-conformance fault <scenario>`.
//!
//! Rank 1 dies; every other rank waits for something from it and prints
//! `ferry-conformance fault <scenario> rank R: error after <ms> ms: <error>`
//! (or `... completed ...`, which the test rejects). The survivors block
//! SIGTERM first, because `ferryrun` sends it to the whole job as soon as
//! one rank dies: they get the two seconds until its SIGKILL to notice the
//! death themselves, which is stricter than the ten seconds the issue
//! allows.

use std::thread;
use std::time::{Duration, Instant};

use ferry::{Rank, Tag};
use nix::sys::signal::{raise, SigSet, Signal};

use super::{Ctx, Failure};

/// The scenarios, by name.
pub const SCENARIOS: &[&str] = &[
    "rts-then-die",
    "die-while-waiting",
    "die-mid-transfer",
    "die-in-allreduce",
    "die-before-barrier",
    "die-in-node-barrier",
    "die-in-node-ibarrier",
    "any-source-after-death",
    "rma-target-dies-in-lock",
    "rma-origin-dies-holding-lock",
];

/// Scenarios whose survivors stay up after reporting (see the runner).
pub const LINGER: &[&str] = &[
    "die-in-allreduce",
    "die-before-barrier",
    "die-in-node-barrier",
    "die-in-node-ibarrier",
    "any-source-after-death",
    "rma-target-dies-in-lock",
    "rma-origin-dies-holding-lock",
];

/// Elements of the allreduce rank 1 dies in (8 MiB of f64: many rounds).
const ALLREDUCE: usize = 1 << 20;

const BIG: usize = 64 << 20;
const DATA: Tag = 1;
const SEEN: Tag = 2;
const NEVER: Tag = 3;

/// Blocks SIGTERM in this thread and every thread started after it.
pub fn block_sigterm() {
    let _ = SigSet::from(Signal::SIGTERM).thread_block();
}

fn die() -> ! {
    let _ = raise(Signal::SIGKILL);
    // SIGKILL cannot be caught; this only runs if raise itself failed.
    std::process::abort()
}

/// Runs `scenario` on this rank; returns the line to print (survivors
/// only: rank 1 never returns).
///
/// # Errors
/// A [`Failure`] for an unknown scenario, or a ferry error before the
/// interesting part.
pub fn run(ctx: &Ctx, scenario: &str) -> Result<String, Failure> {
    let c = &ctx.comm;
    if ctx.size < 2 {
        return Err(Failure("fault scenarios need at least 2 ranks".into()));
    }
    // The RMA scenarios' window, made while everyone is alive.
    let win = if scenario.starts_with("rma-") {
        Some(c.win_allocate::<u64>(8)?)
    } else {
        None
    };
    // Everyone is up before anyone dies.
    ctx.barrier()?;
    // Reset just before each survivor's failing wait starts.
    let mut start = Instant::now();
    let result: Result<usize, ferry::Error> = match (scenario, ctx.rank) {
        // Rank 1 sends the RTS of a 64 MiB message and dies once rank 0
        // has seen it, before rank 0 posts the receive; rank 0 waits long
        // enough for the death to be certain, then receives.
        ("rts-then-die", 1) => {
            let mut r = c.isend(vec![7u8; BIG], 0, DATA)?;
            let _ = r.test()?;
            c.recv::<u8>(&mut [], 0, SEEN)?;
            die()
        }
        ("rts-then-die", 0) => {
            let st = c.probe(1, DATA)?;
            if st.bytes != BIG {
                return Err(Failure(format!("probe saw {st:?}")));
            }
            c.send::<u8>(&[], 1, SEEN)?;
            thread::sleep(Duration::from_millis(300));
            let mut buf = vec![0u8; BIG];
            start = Instant::now();
            c.recv(&mut buf, 1, DATA).map(|s| s.bytes)
        }
        // Rank 1 dies while the others block in a receive from it.
        ("die-while-waiting", 1) => {
            thread::sleep(Duration::from_millis(200));
            die()
        }
        // Rank 1 starts sending 64 MiB to rank 0 and dies 2 ms later, in
        // the middle of the transfer (fragments or CMA chunks).
        ("die-mid-transfer", 1) => {
            let mut r = c.isend(vec![7u8; BIG], 0, DATA)?;
            thread::spawn(|| {
                thread::sleep(Duration::from_millis(2));
                die()
            });
            let _ = r.wait();
            // The transfer finished within 2 ms: die all the same.
            die()
        }
        ("die-mid-transfer", 0) => {
            let mut buf = vec![0u8; BIG];
            c.recv(&mut buf, 1, DATA).map(|s| s.bytes)
        }
        // Rank 1 starts an 8 MiB allreduce and dies 2 ms into it; the
        // others are in the same allreduce, most of them never talking to
        // rank 1 directly in the round they are in.
        ("die-in-allreduce", 1) => {
            c.barrier()?;
            let _r = c.iallreduce(vec![1.0f64; ALLREDUCE], &ferry::Op::sum())?;
            thread::sleep(Duration::from_millis(2));
            die()
        }
        ("die-in-allreduce", _) => {
            c.barrier()?;
            start = Instant::now();
            let send = vec![1.0f64; ALLREDUCE];
            let mut recv = vec![0.0f64; ALLREDUCE];
            c.allreduce(&send, &mut recv, &ferry::Op::sum()).map(|()| 0)
        }
        // Rank 1 dies before entering a barrier the others wait in.
        ("die-before-barrier", 1) => {
            thread::sleep(Duration::from_millis(200));
            die()
        }
        ("die-before-barrier", _) => c.barrier().map(|()| 0),
        // The same inside the shared-memory barrier: one barrier with
        // everyone first sets the node collectives up, so the second runs
        // on the node region's flags.
        ("die-in-node-barrier" | "die-in-node-ibarrier", 1) => {
            c.barrier()?;
            thread::sleep(Duration::from_millis(200));
            die()
        }
        ("die-in-node-barrier", _) => {
            c.barrier()?;
            start = Instant::now();
            c.barrier().map(|()| 0)
        }
        // The nonblocking form: a node operation without a schedule.
        ("die-in-node-ibarrier", _) => {
            c.barrier()?;
            start = Instant::now();
            match c.ibarrier()?.wait() {
                Ok(done) => match done.status.error {
                    Some(e) => Err(e.into()),
                    None => Ok(0),
                },
                Err(e) => Err(e),
            }
        }
        // The others wait in a receive from ANY_SOURCE, which only rank 1
        // would have matched.
        ("any-source-after-death", 1) => {
            thread::sleep(Duration::from_millis(200));
            die()
        }
        ("any-source-after-death", _) => c
            .recv::<u8>(&mut [0u8; 8], ferry::ANY_SOURCE, NEVER)
            .map(|s| s.bytes),
        // Rank 1, a target, dies while the others hold a shared lock of
        // its window and flush it: a flush fails instead of hanging.
        ("rma-target-dies-in-lock", 1) => {
            thread::sleep(Duration::from_millis(200));
            die()
        }
        ("rma-target-dies-in-lock", _) => {
            let w = win.as_ref().ok_or_else(|| Failure("no window".into()))?;
            // The lock itself fails if rank 1 dies before granting it.
            w.lock(1, ferry::rma::LockKind::Shared)
                .and_then(|epoch| loop {
                    if let Err(e) = epoch.put(1, 0, &[7]).and_then(|()| epoch.flush()) {
                        break Err(e);
                    }
                })
        }
        // Rank 1, an origin, dies holding an exclusive lock of rank 0's
        // window: rank 0 forgets it, so ranks 2.. get the lock in turn (a
        // hang here times the job out); then their receive from rank 1
        // fails, which is what the scenario reports.
        ("rma-origin-dies-holding-lock", 1) => {
            let w = win.as_ref().ok_or_else(|| Failure("no window".into()))?;
            let epoch = w.lock(0, ferry::rma::LockKind::Exclusive)?;
            for r in (0..ctx.size as Rank).filter(|&r| r != 1) {
                c.send::<u8>(&[], r, SEEN)?;
            }
            std::mem::forget(epoch);
            die()
        }
        // Rank 0, the target, serves the others' locks while it waits for
        // their word that they had theirs.
        ("rma-origin-dies-holding-lock", 0) => {
            c.recv::<u8>(&mut [], 1, SEEN)?;
            start = Instant::now();
            for r in 2..ctx.size as Rank {
                c.recv::<u8>(&mut [], r, DATA)?;
            }
            c.recv::<u8>(&mut [0u8; 8], 1 as Rank, NEVER)
                .map(|s| s.bytes)
        }
        ("rma-origin-dies-holding-lock", _) => {
            let w = win.as_ref().ok_or_else(|| Failure("no window".into()))?;
            c.recv::<u8>(&mut [], 1, SEEN)?;
            thread::sleep(Duration::from_millis(300));
            start = Instant::now();
            let epoch = w.lock(0, ferry::rma::LockKind::Exclusive)?;
            epoch.put(0, 0, &[ctx.rank as u64])?;
            epoch.unlock()?;
            c.send::<u8>(&[], 0, DATA)?;
            c.recv::<u8>(&mut [0u8; 8], 1 as Rank, NEVER)
                .map(|s| s.bytes)
        }
        (s, _) if !SCENARIOS.contains(&s) => {
            return Err(Failure(format!("unknown fault scenario {s:?}")))
        }
        // Everyone else waits for a message rank 1 never sends.
        (_, _) => c
            .recv::<u8>(&mut [0u8; 8], 1 as Rank, NEVER)
            .map(|s| s.bytes),
    };
    // Measured from the barrier, or (rts-then-die) from the receive.
    let ms = start.elapsed().as_millis();
    Ok(match result {
        Err(e) => format!("error after {ms} ms: {e}"),
        Ok(bytes) => format!("completed after {ms} ms ({bytes} bytes)"),
    })
}
