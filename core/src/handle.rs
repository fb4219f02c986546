//! Request and message handles: a slab index plus a generation.
//!
//! A handle is a `Copy` value, like `MPI_Request`. Each slot of the slab has
//! a generation that advances every time the slot is freed, so a handle kept
//! after its request was freed (a stale handle, a double free) no longer
//! matches its slot and gives [`UsageError::StaleHandle`]: never undefined
//! behaviour, and never the wrong request.
//!
//! Two handle values are reserved: [`Request::NULL`] (no request) and
//! [`Request::EMPTY`] (an operation that already completed inside its
//! initiating call; the MPI Forum proposal "MPI_REQUEST_EMPTY"). Checking for either is a
//! plain comparison: no call into the engine.
//!
//! [`UsageError::StaleHandle`]: crate::UsageError::StaleHandle

use std::fmt;

/// Packs a slot index and a generation. Generation 0 never names a live slot,
/// which leaves the low values free for the reserved handles.
#[inline]
pub(crate) const fn pack(index: u32, generation: u32) -> u64 {
    ((generation as u64) << 32) | index as u64
}

#[inline]
pub(crate) const fn unpack(raw: u64) -> (u32, u32) {
    (raw as u32, (raw >> 32) as u32)
}

/// A handle to an operation in flight (`MPI_Request`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Request(pub(crate) u64);

impl Request {
    /// No request (`MPI_REQUEST_NULL`). Completion calls skip it.
    pub const NULL: Request = Request(0);
    /// An operation that completed inside its initiating call
    /// (`MPI_REQUEST_EMPTY`). No request object exists for it; test and wait
    /// report it complete, not cancelled, with an empty status.
    pub const EMPTY: Request = Request(1);

    /// True for [`Request::NULL`].
    #[inline]
    pub const fn is_null(self) -> bool {
        self.0 == Self::NULL.0
    }

    /// True for [`Request::EMPTY`]: the operation is complete, and no call
    /// into the engine is needed to know it.
    #[inline]
    pub const fn is_empty(self) -> bool {
        self.0 == Self::EMPTY.0
    }

    /// The raw value, for use as an opaque id (on the wire, in logs).
    #[inline]
    pub const fn to_raw(self) -> u64 {
        self.0
    }

    /// Rebuilds a handle from [`Request::to_raw`]. A forged value is harmless:
    /// the engine rejects it as stale.
    #[inline]
    pub const fn from_raw(raw: u64) -> Request {
        Request(raw)
    }
}

impl fmt::Debug for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Request::NULL => f.write_str("Request::NULL"),
            Request::EMPTY => f.write_str("Request::EMPTY"),
            Request(raw) => {
                let (index, generation) = unpack(raw);
                write!(f, "Request({index}#{generation})")
            }
        }
    }
}

/// A message taken out of matching by `mprobe` / `improbe`
/// (`MPI_Message`); receive it with `mrecv`, `imrecv` or `imarecv`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Message(pub(crate) u64);

impl Message {
    /// No message (`MPI_MESSAGE_NULL`).
    pub const NULL: Message = Message(0);
    /// The message "received" from [`PROC_NULL`](crate::PROC_NULL)
    /// (`MPI_MESSAGE_NO_PROC`): receiving it completes at once with the
    /// PROC_NULL status.
    pub const NO_PROC: Message = Message(1);

    /// True for [`Message::NULL`].
    pub const fn is_null(self) -> bool {
        self.0 == Self::NULL.0
    }

    /// True for [`Message::NO_PROC`].
    pub const fn is_no_proc(self) -> bool {
        self.0 == Self::NO_PROC.0
    }
}

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Message::NULL => f.write_str("Message::NULL"),
            Message::NO_PROC => f.write_str("Message::NO_PROC"),
            Message(raw) => {
                let (index, generation) = unpack(raw);
                write!(f, "Message({index}#{generation})")
            }
        }
    }
}
