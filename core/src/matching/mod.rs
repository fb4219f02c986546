//! Tag matching: the posted-receive queue and the unexpected-message queue.
//!
//! # Semantics (MPI)
//! - An arriving message goes to the earliest-*posted* receive whose pattern
//!   matches it ([`PostedQueue::take_match`]).
//! - A receive or probe gets the earliest-*arrived* message its pattern
//!   matches ([`UnexpectedQueue::take`], [`UnexpectedQueue::peek`]).
//! - A pattern's `source: None` is `ANY_SOURCE` and `tag: None` is `ANY_TAG`;
//!   the context is never a wildcard.
//!
//! Together with an engine that, on arrival, tries `take_match` before
//! `push`, and, on posting, tries `take` before `post`, this gives MPI's
//! non-overtaking rule: of two messages from one sender on one context that
//! both match a receive, the one sent first is matched first, provided the
//! engine pushes each sender's messages in the order they were sent.
//!
//! # Design
//! This follows UCX's tag matching (`src/ucp/tag/tag_match.h`): exact
//! receives live in hash buckets, every receive gets a sequence number, and
//! an arrival compares the head of its bucket with the head of the wildcard
//! queue, taking the smaller sequence number. UCX keeps one wildcard queue,
//! so with wildcard receives posted an arrival may scan it linearly. Here
//! every wildcard class has hash-keyed lanes of its own, so wildcards are
//! O(1) too:
//!
//! | class      | pattern             | lane key          |
//! |------------|---------------------|-------------------|
//! | exact      | `(ctx, src, tag)`   | `(ctx, src, tag)` |
//! | any-source | `(ctx, *, tag)`     | `(ctx, tag)`      |
//! | any-tag    | `(ctx, src, *)`     | `(ctx, src)`      |
//! | any-both   | `(ctx, *, *)`       | `ctx`             |
//!
//! - **Posted receives** sit in the one lane of their class. An envelope
//!   `(ctx, src, tag)` can only be matched from the four lanes keyed by its
//!   projections; the earliest receive is the smallest sequence number among
//!   those four heads. A per-class count of live wildcard receives skips
//!   empty classes, so without wildcards only the exact lane is hashed.
//! - **Unexpected messages** are indexed in all four lanes their envelope
//!   projects to, in arrival order. A pattern reads the head of the one lane
//!   of its own class, which holds exactly the messages it matches.
//!
//! Taking an entry through one lane leaves copies in the others (and a
//! cancel leaves one in a posted lane). Those are deleted lazily: entries
//! name their slot in a slab together with their sequence number, which
//! doubles as the slot's generation, so a dead copy is recognised by one
//! comparison. Searches pop dead copies at lane heads; each lane counts its
//! dead entries and compacts when they outnumber the live ones, and an
//! emptied lane leaves its map so that churn through distinct tags does not
//! grow the maps. Every operation is amortized O(1) expected, independent of
//! queue depth (see the complexity tests).
//!
//! # Counters
//! [`MatchStats`] reports depth, searches and lane entries examined
//! (including dead entries skipped), which lets tests check complexity
//! deterministically and lets users read queue behaviour at runtime, as
//! MPICH's MPI_T performance variables do.

mod class;
mod lane;
mod posted;
mod shallow;
mod slots;
mod unexpected;

#[cfg(test)]
mod complexity;

pub use posted::{PostedKey, PostedQueue};
pub(crate) use shallow::SHALLOW;
pub use unexpected::{UnexpectedKey, UnexpectedQueue};

/// Counters of one matching queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MatchStats {
    /// Entries currently queued.
    pub depth: usize,
    /// Searches so far: calls of `take_match`, `take` and `peek`.
    pub searches: u64,
    /// Lane entries inspected by those searches, dead ones skipped included.
    /// Divided by `searches`, this is the average cost of a match.
    pub entries_examined: u64,
}
