//! `passive-epoch`: what a busy target costs a passive-target epoch. Rank
//! 0 times epochs of a lock of rank 1, `--window` (default 64; the
//! issue's figure uses 1000) puts of `size` bytes and the unlock, first
//! while rank 1 waits inside ferry (idle), then while rank 1 computes
//! for `--block-secs` (default 2) without calling ferry (busy). On a node
//! window (`win_allocate` with both ranks on the node) the origin needs
//! nothing of the target, so the two match; with `--private` every
//! operation is a message the target's engine must apply, and the busy
//! epochs wait for the computation to end (unless the progress thread,
//! `FERRY_ASYNC_PROGRESS=1`, serves them), as in the MPIs.

use std::time::{Duration, Instant};

use ferry::rma::{LockKind, Window};

use crate::cli::Subcommand;
use crate::job::{fe, Bench, Sample};

/// The `passive-epoch` subcommand.
pub(crate) const PASSIVE_EPOCH: Subcommand = Subcommand {
    name: "passive-epoch",
    about: "a lock epoch of --window puts with the target idle in ferry, then computing (us)",
    columns: &["idle_us", "busy_us", "busy/idle"],
    default_sizes: || vec![8],
    iterations: |_| (20, 2),
    counts_allocations: false,
    job_warmup: false,
    multi_pair: false,
    measure,
};

fn measure(
    b: &mut Bench,
    size: usize,
    iters: usize,
    warmup: usize,
) -> Result<Option<Sample>, String> {
    let c = &b.comm;
    let win: Window<u8> = if b.options.private {
        c.win_allocate_private(size)
    } else {
        c.win_allocate(size)
    }
    .map_err(fe("win_allocate"))?;
    let puts = b.options.window;
    let data = vec![7u8; size];
    let epoch = |w: &Window<u8>| -> ferry::Result<()> {
        w.start_lock(1, LockKind::Exclusive)?;
        for _ in 0..puts {
            w.put(1, 0, &data)?;
        }
        w.end_lock(1)
    };
    let mut figures = [0.0f64; 2];
    for (k, busy) in [false, true].into_iter().enumerate() {
        b.sync()?;
        if b.rank == 0 {
            // Warm-up epochs while idle only: a busy target's first epoch
            // is the one that waits, if any does.
            for _ in 0..if busy { 0 } else { warmup } {
                epoch(&win).map_err(fe("epoch"))?;
            }
            let t0 = Instant::now();
            for _ in 0..iters {
                epoch(&win).map_err(fe("epoch"))?;
            }
            figures[k] = t0.elapsed().as_secs_f64() * 1e6 / iters as f64;
        } else if busy {
            // Computes without calling ferry.
            let until = Instant::now() + Duration::from_secs_f64(b.options.block_secs);
            let mut x = 1u64;
            while Instant::now() < until {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        b.sync()?;
    }
    win.free().map_err(fe("win_free"))?;
    if b.rank != 0 {
        return Ok(None);
    }
    Ok(Some(vec![figures[0], figures[1], figures[1] / figures[0]]))
}
