//! [`Transfers`]: the RMA operations in flight, by slot (the slot names
//! the operation's context), the regions deregistered while one of them
//! was in flight, and the completions decided without the provider.

use std::collections::VecDeque;

use ferry_core::device::{MemHandle, OpToken};
use ferry_core::{Error, Rank};

/// One RMA in flight: the engine's token, the peer, the local region.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InFlight {
    pub(crate) token: OpToken,
    pub(crate) peer: Rank,
    pub(crate) mem: MemHandle,
}

/// The RMA slots and what hangs on them.
#[derive(Debug)]
pub(crate) struct Transfers {
    /// In-flight RMA by slot.
    ops: Vec<Option<InFlight>>,
    /// The free slots.
    free: Vec<usize>,
    /// Regions deregistered while an RMA on them was in flight: released
    /// when the last one completes (the provider may still write them).
    zombies: Vec<MemHandle>,
    /// Completions decided without the provider (zero-length).
    done: VecDeque<(OpToken, Result<(), Error>)>,
}

impl Transfers {
    /// `slots` concurrent operations at most.
    pub(crate) fn new(slots: usize) -> Transfers {
        Transfers {
            ops: vec![None; slots],
            free: (0..slots).rev().collect(),
            zombies: Vec::new(),
            done: VecDeque::new(),
        }
    }

    /// Whether one of this rank's RMA operations has not completed yet.
    #[inline]
    pub(crate) fn in_flight(&self) -> bool {
        self.free.len() < self.ops.len()
    }

    /// A free slot, if any.
    #[inline]
    pub(crate) fn take(&mut self) -> Option<usize> {
        self.free.pop()
    }

    /// Slot `slot` was taken but nothing was posted on it.
    pub(crate) fn give_back(&mut self, slot: usize) {
        self.free.push(slot);
    }

    /// The operation on slot `slot` was posted.
    pub(crate) fn started(&mut self, slot: usize, op: InFlight) {
        self.ops[slot] = Some(op);
    }

    /// Slot `i`'s operation completed: its record, the slot free again
    /// (`None` for a slot with nothing in flight).
    pub(crate) fn finish(&mut self, i: usize) -> Option<InFlight> {
        let op = self.ops.get_mut(i).and_then(Option::take)?;
        self.free.push(i);
        Some(op)
    }

    /// Whether an operation on `mem` is in flight.
    pub(crate) fn uses(&self, mem: MemHandle) -> bool {
        self.ops.iter().flatten().any(|op| op.mem == mem)
    }

    /// Keeps `mem` registered until the operations on it complete.
    pub(crate) fn bury(&mut self, mem: MemHandle) {
        if !self.zombies.contains(&mem) {
            self.zombies.push(mem);
        }
    }

    /// Whether `mem` was deregistered while in use and is no longer in
    /// use: the caller releases it now.
    pub(crate) fn unbury(&mut self, mem: MemHandle) -> bool {
        if self.zombies.is_empty() || self.uses(mem) {
            return false;
        }
        match self.zombies.iter().position(|&z| z == mem) {
            Some(pos) => {
                self.zombies.swap_remove(pos);
                true
            }
            None => false,
        }
    }

    /// An operation completed at once (nothing to move), reported at the
    /// next `progress`.
    pub(crate) fn done_now(&mut self, token: OpToken) {
        self.done.push_back((token, Ok(())));
    }

    /// The next completion decided without the provider.
    #[inline]
    pub(crate) fn pop_done(&mut self) -> Option<(OpToken, Result<(), Error>)> {
        self.done.pop_front()
    }

    /// Whether a completion decided without the provider waits.
    pub(crate) fn has_done(&self) -> bool {
        !self.done.is_empty()
    }
}
