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

/// One request's state.
#[derive(Debug)]
pub(crate) struct Req {
    pub(crate) kind: Kind,
    pub(crate) persistent: bool,
    /// Persistent requests are inactive between completion and `start`.
    pub(crate) active: bool,
    pub(crate) complete: bool,
    /// Freed by the user while still pending: remove on completion.
    pub(crate) detached: bool,
    pub(crate) status: Status,
    /// The user's buffer, while the engine (not a device) holds it.
    pub(crate) buf: Option<Buf>,
    pub(crate) message: Option<Message>,
    pub(crate) spec: Spec,
    pub(crate) op: Op,
}

impl Req {
    pub(crate) fn new(kind: Kind, spec: Spec, buf: Option<Buf>) -> Req {
        Req {
            kind,
            persistent: false,
            active: true,
            complete: false,
            detached: false,
            status: Status::EMPTY,
            buf,
            message: None,
            spec,
            op: Op::Idle,
        }
    }
}

/// Protocol state.
#[derive(Debug)]
pub(crate) enum Op {
    /// Not in flight (complete, inactive, or generic).
    Idle,
    /// A send waiting in the outbox for its eager packet or RTS to go out.
    SendQueued(Queued),
    /// A synchronous eager send waiting for its SyncAck.
    AwaitAck { dest: Rank },
    /// Rendezvous, sender side.
    RndvSend(RndvSend),
    /// A receive (or mprobe) in the posted queue.
    Posted { key: PostedKey },
    /// A probe request waiting for a matching arrival.
    Probing,
    /// Rendezvous, receiver side.
    RndvRecv(RndvRecv),
    /// Done; the registration ends and the request completes in the outbox.
    Releasing(Releasing),
    /// A collective's schedule (a key of `State::colls`), kept across
    /// completions so that a persistent collective can run again.
    Coll(u64),
    /// A node collective without a schedule (a key of `State::node_runs`).
    NodeColl(u64),
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
