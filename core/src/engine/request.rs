//! What the engine keeps per request: the user's intent ([`Spec`]), the
//! buffer while the engine holds it, and the protocol state ([`Op`]).
//!
//! Protocol states are enums of per-state structs (rustls' `Expect*` style):
//! each state holds exactly what the next transition needs.

use crate::buffer::Buf;
use crate::device::MemHandle;
use crate::envelope::{ContextId, Rank, Tag};
use crate::handle::Message;
use crate::matching::PostedKey;
use crate::status::Status;

/// Send modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SendMode {
    /// Standard: may complete before the receive is posted (eager).
    #[default]
    Standard,
    /// Synchronous (`issend`): completes only once a receive matched it.
    Synchronous,
    /// Ready (`irsend`): the caller asserts the receive is already posted.
    /// Carried like a standard send; an unmatched arrival is counted in
    /// [`Counters::ready_unmatched`](super::Counters::ready_unmatched).
    Ready,
}

/// The kind of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Send,
    Recv,
    /// Receive into a buffer the library allocates.
    ARecv,
    /// Completes when a matching message is available; leaves it in place.
    Probe,
    /// Completes when a matching message is available and takes it out of
    /// matching as a [`Message`].
    MProbe,
    /// Completed by its owner (a collective schedule) through
    /// [`Engine::complete_generic`](super::Engine::complete_generic).
    Generic,
    /// A collective: its `Op::Coll` names the running schedule, its
    /// `Op::NodeColl` the node operation.
    Coll,
}

/// What the operation was asked to do; kept for persistent restarts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spec {
    /// Destination (send) or source selector (receive; may be ANY_SOURCE).
    pub(crate) peer: Rank,
    /// Tag (send) or tag selector (receive; may be ANY_TAG).
    pub(crate) tag: Tag,
    pub(crate) context: ContextId,
    pub(crate) mode: SendMode,
}

/// Where a request is in its life. One value rather than four flags
/// (persistent, active, complete, detached), so that a combination no
/// request can be in cannot be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Life {
    /// One-shot, in flight.
    Pending,
    /// One-shot, done: the next test or wait takes it and frees it.
    Complete,
    /// Freed by its owner while in flight: removed when it completes, and
    /// a stale handle to everyone from the free on.
    Detached,
    /// Persistent, started and in flight.
    Started,
    /// Persistent, done: the next test or wait takes it, and it becomes
    /// inactive.
    Finished,
    /// Persistent, not started (made, or finished and taken).
    Inactive,
}

impl Life {
    pub(crate) fn persistent(self) -> bool {
        matches!(self, Life::Started | Life::Finished | Life::Inactive)
    }

    /// Persistent requests are inactive between completion and `start`;
    /// every other request is active.
    pub(crate) fn active(self) -> bool {
        self != Life::Inactive
    }

    /// Done (an inactive persistent request counts as done).
    pub(crate) fn complete(self) -> bool {
        matches!(self, Life::Complete | Life::Finished | Life::Inactive)
    }

    pub(crate) fn detached(self) -> bool {
        self == Life::Detached
    }

    /// The operation finished: `Some` of the next life, or `None` for a
    /// detached request, which is to be removed.
    pub(crate) fn finish(self) -> Option<Life> {
        match self {
            Life::Detached => None,
            Life::Started | Life::Finished => Some(Life::Finished),
            // Nothing runs: a late event leaves it inactive.
            Life::Inactive => Some(Life::Inactive),
            Life::Pending | Life::Complete => Some(Life::Complete),
        }
    }
}

/// One request's state.
#[derive(Debug)]
pub(crate) struct Req {
    pub(crate) kind: Kind,
    pub(crate) life: Life,
    pub(crate) status: Status,
    /// The user's buffer, while the engine (not a device) holds it.
    pub(crate) buf: Option<Buf>,
    pub(crate) message: Option<Message>,
    pub(crate) spec: Spec,
    pub(crate) op: Op,
}

impl Req {
    /// A persistent request, inactive until started.
    pub(crate) fn persistent(kind: Kind, spec: Spec, buf: Option<Buf>) -> Req {
        Req {
            life: Life::Inactive,
            ..Req::new(kind, spec, buf)
        }
    }

    #[inline]
    pub(crate) fn new(kind: Kind, spec: Spec, buf: Option<Buf>) -> Req {
        Req {
            kind,
            life: Life::Pending,
            status: Status::EMPTY,
            buf,
            message: None,
            spec,
            op: Op::Idle,
        }
    }
}

/// Protocol state. The states an eager message passes through are inline;
/// the rest ([`Cold`]) are boxed, so that the request a small message makes
/// stays small: 152 bytes instead of 216 (a posted receive's whole life is
/// in its first cache lines).
#[derive(Debug)]
pub(crate) enum Op {
    /// Not in flight (complete, inactive, or generic).
    Idle,
    /// A synchronous eager send waiting for its SyncAck.
    AwaitAck { dest: Rank },
    /// A receive (or mprobe) in the posted queue.
    Posted { key: PostedKey },
    /// A probe request waiting for a matching arrival.
    Probing,
    /// A collective's schedule (a key of `State::colls`), kept across
    /// completions so that a persistent collective can run again.
    Coll(u64),
    /// A node collective without a schedule (a key of `State::node_runs`).
    NodeColl(u64),
    /// A state that holds more (see [`Cold`]); its box comes from
    /// [`ColdBoxes`].
    Cold(Box<Cold>),
}

impl Op {
    /// The cold state, if the operation is in one.
    pub(crate) fn cold(&self) -> Option<&Cold> {
        match self {
            Op::Cold(c) => Some(c),
            _ => None,
        }
    }

    /// As [`Op::cold`], mutably.
    pub(crate) fn cold_mut(&mut self) -> Option<&mut Cold> {
        match self {
            Op::Cold(c) => Some(c),
            _ => None,
        }
    }
}

/// The protocol states that hold registrations, remote keys and transfer
/// progress: a queued send's and the rendezvous states. An eager message
/// that the device takes at once never enters one.
#[derive(Debug)]
pub(crate) enum Cold {
    /// A send waiting in the outbox for its eager packet or RTS to go out.
    SendQueued(Queued),
    /// Rendezvous, sender side.
    RndvSend(RndvSend),
    /// Rendezvous, receiver side.
    RndvRecv(RndvRecv),
    /// Done; the registration ends and the request completes in the outbox.
    Releasing(Releasing),
}

/// The boxes of [`Op::Cold`], kept when a request leaves a cold state, so
/// that a steady stream of rendezvous or queued sends allocates nothing.
/// [`ColdBoxes::SPARE`] are made at start, so that the first sends an
/// engine queues (a peer that falls behind mid-run) allocate nothing either.
#[derive(Debug)]
pub(crate) struct ColdBoxes {
    // The boxes themselves are what is kept: handing one out must not
    // allocate.
    #[allow(clippy::vec_box)]
    free: Vec<Box<Cold>>,
}

impl ColdBoxes {
    /// Boxes kept at most; more are freed (a burst of concurrent
    /// rendezvous transfers does not pin its memory for ever).
    const KEEP: usize = 256;
    /// Boxes made at start (about 90 bytes each), as the unexpected pool
    /// makes its first buffers.
    pub(crate) const SPARE: usize = 32;

    /// The boxes, with [`ColdBoxes::SPARE`] made and room for
    /// [`ColdBoxes::KEEP`].
    pub(crate) fn new() -> ColdBoxes {
        let mut free = Vec::with_capacity(Self::KEEP);
        free.extend((0..Self::SPARE).map(|_| {
            Box::new(Cold::SendQueued(Queued {
                proto: crate::protocol::Protocol::Eager,
                exposed: None,
                len: 0,
            }))
        }));
        ColdBoxes { free }
    }

    /// Puts `op` into the cold state `c`, in the box it already has if it
    /// is in one.
    pub(crate) fn set(&mut self, op: &mut Op, c: Cold) {
        if let Op::Cold(b) = op {
            **b = c;
            return;
        }
        let b = match self.free.pop() {
            Some(mut b) => {
                *b = c;
                b
            }
            None => Box::new(c),
        };
        *op = Op::Cold(b);
    }

    /// Puts `op` into the inline state `to`, keeping its box if it had one.
    #[inline]
    pub(crate) fn set_inline(&mut self, op: &mut Op, to: Op) {
        debug_assert!(!matches!(to, Op::Cold(_)), "set_inline with a cold state");
        match op {
            // Every completion passes here; an eager one was never cold.
            Op::Cold(_) => self.keep(std::mem::replace(op, to)),
            _ => *op = to,
        }
    }

    #[cold]
    fn keep(&mut self, old: Op) {
        if let Op::Cold(b) = old {
            if self.free.len() < Self::KEEP {
                self.free.push(b);
            }
        }
    }
}

/// A send that has chosen its protocol but not yet sent its first packet.
#[derive(Debug)]
pub(crate) struct Queued {
    pub(crate) proto: crate::protocol::Protocol,
    /// Rendezvous-get: the buffer, registered (the device holds it).
    pub(crate) exposed: Option<(MemHandle, crate::wire::RemoteKey)>,
    /// The message length (the buffer may be with the device).
    pub(crate) len: usize,
}

/// A finished transfer waiting to give its buffer back.
#[derive(Debug)]
pub(crate) struct Releasing {
    pub(crate) mem: Option<MemHandle>,
    pub(crate) status: Status,
    /// A FIN to send afterwards: `(peer, request, failed)`.
    pub(crate) fin: Option<(Rank, u64, bool)>,
}

/// Sender-side rendezvous states.
#[derive(Debug)]
pub(crate) enum RndvSend {
    /// RTS sent (or queued) with the buffer exposed for the receiver's get.
    AwaitFin(AwaitFin),
    /// RTS sent; waiting for CTS (put and fragmented protocols).
    AwaitCts(AwaitCts),
    /// Writing into the receiver's buffer.
    Putting(Putting),
    /// Sending fragments.
    Fragmenting(Fragmenting),
}

#[derive(Debug)]
pub(crate) struct AwaitFin {
    pub(crate) dest: Rank,
    pub(crate) mem: MemHandle,
    /// The message's length (the buffer is the device's meanwhile).
    pub(crate) len: usize,
}

#[derive(Debug)]
pub(crate) struct AwaitCts {
    pub(crate) dest: Rank,
}

#[derive(Debug)]
pub(crate) struct Putting {
    pub(crate) dest: Rank,
    /// The receiver's request, for the FIN.
    pub(crate) receiver: u64,
    pub(crate) remote: crate::wire::RemoteKey,
    pub(crate) len: usize,
    /// `None` until registered.
    pub(crate) mem: Option<MemHandle>,
}

#[derive(Debug)]
pub(crate) struct Fragmenting {
    pub(crate) dest: Rank,
    pub(crate) receiver: u64,
    pub(crate) next: usize,
    pub(crate) end: usize,
    pub(crate) fragment: usize,
    /// The registration of a get the receiver declined (its buffer is
    /// segmented): ended before the first fragment goes out.
    pub(crate) exposed: Option<MemHandle>,
}

/// Receiver-side rendezvous states.
#[derive(Debug)]
pub(crate) enum RndvRecv {
    /// Reading the sender's buffer.
    Getting(Getting),
    /// CTS sent with our buffer exposed; waiting for the sender's FIN.
    AwaitPutFin(AwaitPutFin),
    /// CTS sent; fragments arriving.
    AwaitFrags(AwaitFrags),
}

/// Common facts about a matched rendezvous message.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Matched {
    pub(crate) source: Rank,
    pub(crate) sender: u64,
    /// What will land: `min(msg_len, capacity)`.
    pub(crate) len: usize,
}

#[derive(Debug)]
pub(crate) struct Getting {
    pub(crate) m: Matched,
    pub(crate) remote: crate::wire::RemoteKey,
    pub(crate) mem: Option<MemHandle>,
}

#[derive(Debug)]
pub(crate) struct AwaitPutFin {
    pub(crate) m: Matched,
    pub(crate) mem: Option<MemHandle>,
}

#[derive(Debug)]
pub(crate) struct AwaitFrags {
    pub(crate) m: Matched,
    pub(crate) received: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_fits_in_three_cache_lines() {
        // The figure the module docs of `Op` give; a new inline field or
        // state that grows it should be a decision, not an accident.
        assert!(size_of::<Req>() <= 152, "Req is {} bytes", size_of::<Req>());
        assert!(size_of::<Op>() <= 24, "Op is {} bytes", size_of::<Op>());
    }

    #[test]
    fn cold_boxes_are_reused() {
        let mut boxes = ColdBoxes::new();
        assert_eq!(boxes.free.len(), ColdBoxes::SPARE, "made at start");
        let mut op = Op::Idle;
        let queued = || {
            Cold::SendQueued(Queued {
                proto: crate::protocol::Protocol::Eager,
                exposed: None,
                len: 1,
            })
        };
        boxes.set(&mut op, queued());
        let first: *const Cold = op.cold().unwrap();
        boxes.set(
            &mut op,
            Cold::RndvSend(RndvSend::AwaitCts(AwaitCts { dest: 3 })),
        );
        assert_eq!(
            op.cold().unwrap() as *const Cold,
            first,
            "a cold-to-cold change keeps its box"
        );
        boxes.set_inline(&mut op, Op::Idle);
        assert!(op.cold().is_none());
        assert_eq!(boxes.free.len(), ColdBoxes::SPARE);
        let mut other = Op::Idle;
        boxes.set(&mut other, queued());
        assert_eq!(
            other.cold().unwrap() as *const Cold,
            first,
            "the kept box is used again"
        );
        assert_eq!(boxes.free.len(), ColdBoxes::SPARE - 1);
    }
}
