//! ferry-core's error type, split by who is at fault.
//!
//! - [`UsageError`]: the caller passed something wrong (bad rank, bad tag,
//!   a stale handle) or the operation's own semantics failed it (truncation).
//! - [`PeerError`]: another process misbehaved or died.
//! - [`DeviceError`]: the device (or the OS under it) reported a failure.
//! - [`Error::Internal`]: a bug in ferry; please report it.
//!
//! Back-pressure is never an error: devices hand the operation back instead.
//! All variants are `Copy`, so a [`Status`](crate::Status) can carry one.

use crate::envelope::Rank;

/// Any error ferry-core reports.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The caller's fault.
    #[error("usage error: {0}")]
    Usage(#[from] UsageError),
    /// A peer's fault.
    #[error("peer error: {0}")]
    Peer(#[from] PeerError),
    /// The device's (or the OS's) fault.
    #[error("device error: {0}")]
    Device(#[from] DeviceError),
    /// A bug in ferry; please report it.
    #[error("internal error (please report): {0}")]
    Internal(&'static str),
}

/// Who is at fault for an [`Error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The caller.
    Usage,
    /// Another process.
    Peer,
    /// The device or OS.
    Device,
    /// ferry itself.
    Internal,
}

impl Error {
    /// Who is at fault.
    pub fn fault(&self) -> Fault {
        match self {
            Error::Usage(_) => Fault::Usage,
            Error::Peer(_) => Fault::Peer,
            Error::Device(_) => Fault::Device,
            Error::Internal(_) => Fault::Internal,
        }
    }

    /// True for [`UsageError::Truncated`].
    pub fn is_truncation(&self) -> bool {
        matches!(self, Error::Usage(UsageError::Truncated { .. }))
    }
}

/// Errors caused by the caller, or by the semantics of the operation.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UsageError {
    /// A rank outside `0..size` (or a wildcard where none is allowed).
    #[error("invalid rank {rank} (job size {size})")]
    InvalidRank {
        /// The rank given.
        rank: Rank,
        /// The job size.
        size: u32,
    },
    /// A tag outside `0..=TAG_UB` (or a wildcard where none is allowed).
    #[error("invalid tag {tag} (valid: 0..=TAG_UB)")]
    InvalidTag {
        /// The tag given.
        tag: i32,
    },
    /// The message was longer than the receive buffer; the buffer holds the
    /// first `capacity` bytes and nothing was written past it (MPI_ERR_TRUNCATE).
    #[error("message truncated: {message} bytes sent, receive buffer holds {capacity}")]
    Truncated {
        /// The length of the message that was sent.
        message: usize,
        /// The capacity of the receive buffer.
        capacity: usize,
    },
    /// A request or message handle that does not name a live object: it was
    /// already completed and freed, or it was never valid.
    #[error("stale or invalid handle")]
    StaleHandle,
    /// The operation is not valid for this kind of request (for example
    /// `start` on a non-persistent request, or `mrecv` on a probe handle).
    #[error("operation not valid for this request: {0}")]
    WrongRequestKind(&'static str),
    /// The persistent request is active: it cannot be started again, and its
    /// buffer cannot be touched, until it completes.
    #[error("persistent request is active")]
    RequestActive,
    /// The message is too large for this engine.
    #[error("message of {len} bytes exceeds the limit of {max}")]
    MessageTooLarge {
        /// The length given.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// An input and output slice have different lengths.
    #[error("slice lengths differ: {0}")]
    LengthMismatch(&'static str),
    /// The members of a communicator disagree on a collective call: its
    /// operation, root or count (or the order of the calls). Every member
    /// still waiting in the call gets this error; a member that finished its
    /// part before anyone noticed keeps its result. The communicator's later
    /// collectives are not affected, but messages of the failed call may
    /// still be in flight: free the communicator.
    #[error("collective call differs between members (found by rank {found_by}): roots, counts or the order of collectives")]
    CollectiveMismatch {
        /// The job rank that saw a member's message with another signature.
        found_by: Rank,
    },
    /// The reduction operation is not defined on this datatype (MPI_ERR_OP), e.g. a bitwise op on floats.
    #[error("reduction {op} is not defined on {}", .datatype.name())]
    OpNotDefined {
        /// The operation's name, as [`ReduceOp::name`](crate::reduction::ReduceOp::name) gives it.
        op: &'static str,
        /// The datatype (a name would make every `Status` carrying an
        /// error 8 bytes bigger, and statuses are moved on every test).
        datatype: crate::reduction::Datatype,
    },
    /// The device needed for this is not present or not compiled in.
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
    /// The buffer could not be allocated.
    #[error("out of memory allocating {bytes} bytes")]
    OutOfMemory {
        /// The size asked for.
        bytes: usize,
    },
    /// A one-sided operation's target range ends past the target's window
    /// (MPI_ERR_RMA_RANGE); nothing was sent.
    #[error(
        "one-sided operation's range ends at byte {end}, past the target window's {size} bytes"
    )]
    RmaRange {
        /// The byte just past the range.
        end: u64,
        /// The target window's size in bytes.
        size: u64,
    },
    /// A one-sided operation or synchronization call that the window's
    /// epochs do not allow (MPI_ERR_RMA_SYNC): an operation outside an
    /// access epoch, an unlock without a lock, a second lock of one target.
    #[error("one-sided synchronization: {0}")]
    RmaSync(&'static str),
    /// A target refused a one-sided request it could not apply (a range or
    /// type it does not have): the origin and target disagree on the
    /// window.
    #[error("the target refused a one-sided request (the ranks disagree on the window)")]
    RmaRefused,
}

/// Errors caused by another process.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PeerError {
    /// The peer sent something that violates the wire protocol (a corrupted
    /// or forged header, an unknown request id, an out-of-order sequence).
    #[error("protocol violation from rank {rank}: {what}")]
    Protocol {
        /// The offending peer.
        rank: Rank,
        /// What was wrong.
        what: &'static str,
    },
    /// The peer could not complete its side of a transfer (an RDMA error or
    /// an allocation failure at the peer).
    #[error("rank {rank} failed its side of a transfer")]
    TransferFailed {
        /// The peer that reported the failure.
        rank: Rank,
    },
    /// The peer died or became unreachable.
    #[error("rank {rank} died or is unreachable")]
    Died {
        /// The dead peer.
        rank: Rank,
    },
    /// A receive from `ANY_SOURCE` on a communicator one of whose members
    /// died: it cannot be known whether the message would have come from
    /// the dead rank, so it fails rather than wait forever (ULFM's
    /// `MPI_ERR_PROC_FAILED_PENDING`).
    #[error(
        "rank {rank} of this communicator died: a receive from any source cannot complete safely"
    )]
    FailedPending {
        /// The dead rank (job rank).
        rank: Rank,
    },
}

/// Errors reported by a device or the OS.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    /// A system call or library call failed with this code.
    #[error("{what}: error code {code}")]
    Os {
        /// What was being done.
        what: &'static str,
        /// errno, -FI_E*, or the library's code.
        code: i32,
    },
    /// A work completion (or CQ error entry) reported failure.
    #[error("{what}: completion status {status}")]
    Completion {
        /// What was being done.
        what: &'static str,
        /// The device's status code.
        status: i32,
    },
    /// The device does not support what was asked of it.
    #[error("device does not support {0}")]
    Unsupported(&'static str),
    /// The device reported an asynchronous event that broke the path to a
    /// peer: its port went down, or a queue pair or the device failed.
    #[error("{what} (asynchronous event {event})")]
    Event {
        /// What happened.
        what: &'static str,
        /// The device's event code.
        event: u32,
    },
}

/// The result type used throughout ferry-core.
pub type Result<T, E = Error> = std::result::Result<T, E>;
