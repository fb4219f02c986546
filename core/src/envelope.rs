//! Message envelopes: who sent a message, with which tag, on which context.
//!
//! Ranks and tags are `i32`, as in MPI, so that the wildcard and null
//! constants keep their familiar values. Every value that crosses the API is
//! validated before it reaches the matching engine.

use crate::error::{Error, UsageError};

/// A process index within the job (the engine works in job-wide ranks).
pub type Rank = i32;
/// A message tag; user tags lie in `0..=TAG_UB`.
pub type Tag = i32;
/// A communication context. Each communicator (and each collective schedule
/// space) has its own, so their traffic never matches.
pub type ContextId = u32;

/// Receive from any source.
pub const ANY_SOURCE: Rank = -2;
/// The null process: sends to it and receives from it complete at once.
pub const PROC_NULL: Rank = -1;
/// The root of a rooted collective on an intercommunicator, as the root
/// itself names it (`MPI_ROOT`); the other members of its group pass
/// [`PROC_NULL`].
pub const ROOT: Rank = -3;
/// Receive with any tag.
pub const ANY_TAG: Tag = -1;
/// The largest valid user tag (MPI requires at least 32767).
pub const TAG_UB: Tag = (1 << 30) - 1;

/// The matching information a message carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Envelope {
    /// The sending rank.
    pub source: Rank,
    /// The message tag.
    pub tag: Tag,
    /// The context the message was sent on.
    pub context: ContextId,
}

/// What a receive or probe is looking for; `None` is a wildcard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Pattern {
    /// The context to match (never a wildcard).
    pub context: ContextId,
    /// `None` matches any source.
    pub source: Option<Rank>,
    /// `None` matches any tag.
    pub tag: Option<Tag>,
}

impl Pattern {
    /// Does a message with this envelope satisfy the pattern?
    #[inline]
    pub fn matches(&self, env: &Envelope) -> bool {
        self.context == env.context
            && self.source.is_none_or(|s| s == env.source)
            && self.tag.is_none_or(|t| t == env.tag)
    }

    /// True when the pattern has at least one wildcard.
    #[inline]
    pub fn is_wildcard(&self) -> bool {
        self.source.is_none() || self.tag.is_none()
    }
}

/// Checks a destination rank for a send: it must name a process of the job
/// (or be [`PROC_NULL`], which the caller handles separately).
pub(crate) fn check_dest(rank: Rank, size: u32) -> Result<(), Error> {
    if rank >= 0 && (rank as u32) < size {
        Ok(())
    } else {
        Err(UsageError::InvalidRank { rank, size }.into())
    }
}

/// Checks a source selector for a receive: a valid rank or [`ANY_SOURCE`].
pub(crate) fn check_source(rank: Rank, size: u32) -> Result<Option<Rank>, Error> {
    if rank == ANY_SOURCE {
        Ok(None)
    } else {
        check_dest(rank, size).map(|()| Some(rank))
    }
}

/// Checks a tag for a send: `0..=TAG_UB`.
pub(crate) fn check_send_tag(tag: Tag) -> Result<(), Error> {
    if (0..=TAG_UB).contains(&tag) {
        Ok(())
    } else {
        Err(UsageError::InvalidTag { tag }.into())
    }
}

/// Checks a tag selector for a receive: a valid tag or [`ANY_TAG`].
pub(crate) fn check_recv_tag(tag: Tag) -> Result<Option<Tag>, Error> {
    if tag == ANY_TAG {
        Ok(None)
    } else {
        check_send_tag(tag).map(|()| Some(tag))
    }
}
