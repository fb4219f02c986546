//! A collective call's signature, carried in the tag of its messages.
//!
//! MPI leaves ranks that disagree on a collective (a different root, a
//! different count) erroneous, and most MPIs hang. ferry's collective tag is
//! the call's sequence number on the communicator plus a hash of what every
//! member must agree on: the operation, the root and the byte count. A
//! message of a disagreeing rank then never matches a receive (so nothing is
//! written from it), and a rank stuck in a collective finds it in the
//! unexpected queue: same sequence number, another signature. That rank
//! revokes the call: it sends every member a message with the revoke
//! signature, and every member's collective with that sequence number fails
//! with [`UsageError::CollectiveMismatch`](crate::UsageError::CollectiveMismatch),
//! including those still waiting for partners that will never send.
//!
//! What no message shows cannot be found this way: if two members each
//! believe they are a reduce's root, each only receives, nothing with a
//! wrong signature is ever sent, and the call deadlocks as in any MPI.

use super::Collective;
use crate::envelope::{Tag, TAG_UB};

/// Bits of the tag that hold the call's sequence number.
const SEQ_BITS: u32 = 20;
const SEQ_MASK: Tag = (1 << SEQ_BITS) - 1;
/// Signatures a tag can hold: what is left of `0..=TAG_UB`.
const SIG_VALUES: u64 = ((TAG_UB as u64) + 1) >> SEQ_BITS;
/// The signature of a revoke message; no call hashes to it.
const REVOKE: u64 = SIG_VALUES - 1;
/// The revoke signature of [`TagSpace::Inter`]; its calls hash to
/// `1..INTER_REVOKE`.
const INTER_REVOKE: u64 = (INTER_TAGS.end >> SEQ_BITS) as u64 - 1;

/// The tags of an intercommunicator's collectives: signatures 1 to 511
/// above the 20 sequence bits. The context they travel on also carries
/// an intercommunicator's leaders' exchanges (`ferry`'s bridge), whose tags
/// are below `1 << 20` or from `1 << 29` up, so neither side ever takes
/// the other's messages, and a schedule never mistakes a leader's message
/// for a member's disagreeing call.
pub const INTER_TAGS: std::ops::Range<Tag> = (1 << SEQ_BITS)..(1 << 29);

/// Which tags a schedule's messages carry on its context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TagSpace {
    /// All of `0..=TAG_UB`: an intracommunicator's collective context
    /// carries nothing else.
    #[default]
    Full,
    /// [`INTER_TAGS`] only; the context's other tags are not the
    /// collectives' business.
    Inter,
}

impl TagSpace {
    fn revoke(self) -> u64 {
        match self {
            TagSpace::Full => REVOKE,
            TagSpace::Inter => INTER_REVOKE,
        }
    }
}

/// What the members of one call must agree on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Signature {
    kind: u64,
    root: u64,
    bytes: u64,
}

impl Signature {
    /// The signature of `coll` given this rank's buffer lengths. Only
    /// figures that every member sees alike go in: a v-collective's counts
    /// differ per rank, so only their sum (where every member knows it) or
    /// nothing is used.
    pub(crate) fn of(
        coll: &Collective,
        size: u32,
        input: Option<usize>,
        output: Option<usize>,
    ) -> Signature {
        let per_rank = |len: Option<usize>| len.map(|l| l / size.max(1) as usize);
        let data = input.or(output);
        let (kind, root, bytes) = match coll {
            Collective::Barrier => (1, 0, None),
            Collective::Bcast { root } => (2, *root, output),
            Collective::Reduce { root, .. } => (3, *root, data),
            Collective::Allreduce { .. } => (4, 0, data),
            Collective::Gather { root, v } => (
                5,
                *root,
                v.is_none().then(|| input.or(per_rank(output))).flatten(),
            ),
            Collective::Scatter { root, v } => (
                6,
                *root,
                v.is_none().then(|| output.or(per_rank(input))).flatten(),
            ),
            Collective::Allgather { v } => match v {
                Some(v) => (7, 0, Some(v.counts.iter().sum())),
                None => (7, 0, input.or(per_rank(output))),
            },
            Collective::Alltoall { v } => (8, 0, v.is_none().then(|| per_rank(output)).flatten()),
            Collective::ReduceScatter { counts, .. } => match counts {
                Some(c) => (9, 0, Some(c.iter().sum())),
                None => (9, 0, data),
            },
            Collective::Scan { .. } => (10, 0, data),
            Collective::Exscan { .. } => (11, 0, data),
            // Block sizes may differ per neighbor pair, and a member's
            // neighbors are its own: only the kind is common.
            Collective::Neighbor { .. } => (12, 0, None),
        };
        Signature {
            kind,
            root: u64::from(root),
            bytes: bytes.unwrap_or(0) as u64,
        }
    }

    /// The signature of the call's kind alone: an intercommunicator's
    /// two groups see roots and buffers differently (the root group passes
    /// `ROOT` or nothing, the other the root's rank; a gather's root holds
    /// one block per remote member), so only the operation is common.
    pub(crate) fn kind_only(self) -> Signature {
        Signature {
            kind: self.kind,
            root: 0,
            bytes: 0,
        }
    }

    /// The tag of call number `seq` with this signature.
    pub(crate) fn tag(self, seq: Tag) -> Tag {
        self.tag_in(seq, TagSpace::Full)
    }

    /// The tag of call number `seq` with this signature, in `space`.
    pub(crate) fn tag_in(self, seq: Tag, space: TagSpace) -> Tag {
        let mut h = self.kind.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h = (h ^ self.root).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        h = (h ^ self.bytes).wrapping_mul(0x94D0_49BB_1331_11EB);
        h ^= h >> 31;
        match space {
            TagSpace::Full => compose(seq, h % REVOKE),
            TagSpace::Inter => compose(seq, 1 + h % (INTER_REVOKE - 1)),
        }
    }
}

fn compose(seq: Tag, sig: u64) -> Tag {
    ((sig as Tag) << SEQ_BITS) | (seq & SEQ_MASK)
}

/// The tag of the revoke message for the call whose tag is `tag`.
pub(crate) fn revoke_tag(tag: Tag, space: TagSpace) -> Tag {
    compose(tag, space.revoke())
}

/// How a message found on a collective context relates to the call whose
/// tag is `mine`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stray {
    /// Not this call's business (another call, or this call's own message).
    Unrelated,
    /// A member revoked this call.
    Revoke,
    /// A member runs this call with another signature.
    Disagrees,
}

pub(crate) fn classify(mine: Tag, found: Tag, space: TagSpace) -> Stray {
    let foreign = space == TagSpace::Inter && !INTER_TAGS.contains(&found);
    if foreign || found == mine || (found & SEQ_MASK) != (mine & SEQ_MASK) {
        Stray::Unrelated
    } else if (found >> SEQ_BITS) as u64 == space.revoke() {
        Stray::Revoke
    } else {
        Stray::Disagrees
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reduction::{Datatype, ReduceOp};

    fn allreduce() -> Collective {
        Collective::Allreduce {
            op: ReduceOp::Sum,
            dtype: Datatype::F64,
        }
    }

    #[test]
    fn tags_stay_in_the_user_range() {
        for seq in [0, 1, SEQ_MASK, TAG_UB] {
            for bytes in [0, 8, 1 << 20, usize::MAX] {
                let t = Signature::of(&allreduce(), 3, Some(bytes), None).tag(seq);
                assert!((0..=TAG_UB).contains(&t));
                assert!((0..=TAG_UB).contains(&revoke_tag(t, TagSpace::Full)));
            }
        }
    }

    #[test]
    fn in_place_and_not_agree() {
        let a = Signature::of(&allreduce(), 4, Some(64), Some(64));
        let b = Signature::of(&allreduce(), 4, None, Some(64));
        assert_eq!(a, b);
        let gather = Collective::Gather { root: 1, v: None };
        let root = Signature::of(&gather, 4, None, Some(64));
        let leaf = Signature::of(&gather, 4, Some(16), None);
        assert_eq!(root, leaf);
    }

    #[test]
    fn roots_counts_and_kinds_differ() {
        let base = Signature::of(&Collective::Bcast { root: 0 }, 4, None, Some(64)).tag(7);
        let root = Signature::of(&Collective::Bcast { root: 1 }, 4, None, Some(64)).tag(7);
        let count = Signature::of(&Collective::Bcast { root: 0 }, 4, None, Some(128)).tag(7);
        let kind = Signature::of(&allreduce(), 4, None, Some(64)).tag(7);
        for other in [root, count, kind] {
            assert_eq!(classify(base, other, TagSpace::Full), Stray::Disagrees);
        }
        assert_eq!(classify(base, base, TagSpace::Full), Stray::Unrelated);
        assert_eq!(
            classify(base, revoke_tag(base, TagSpace::Full), TagSpace::Full),
            Stray::Revoke
        );
        let next = Signature::of(&Collective::Bcast { root: 1 }, 4, None, Some(64)).tag(8);
        assert_eq!(classify(base, next, TagSpace::Full), Stray::Unrelated);
    }

    #[test]
    fn inter_tags_stay_in_their_range() {
        let bcast = Signature::of(&Collective::Bcast { root: 0 }, 3, None, Some(8)).kind_only();
        for seq in [0, 1, 4, SEQ_MASK, TAG_UB] {
            let t = bcast.tag_in(seq, TagSpace::Inter);
            assert!(INTER_TAGS.contains(&t), "{t}");
            assert!(INTER_TAGS.contains(&revoke_tag(t, TagSpace::Inter)));
            assert_ne!(revoke_tag(t, TagSpace::Inter), t);
        }
        let mine = bcast.tag_in(3, TagSpace::Inter);
        // A leader's bridge messages: tags 1..=4 and from 1 << 29.
        for foreign in [3, (1 << 29) + 3, (1 << 29) + (1 << 20) + 3] {
            assert_eq!(classify(mine, foreign, TagSpace::Inter), Stray::Unrelated);
        }
        let other = Signature::of(&allreduce(), 3, None, Some(8)).kind_only();
        let theirs = other.tag_in(3, TagSpace::Inter);
        assert_eq!(classify(mine, theirs, TagSpace::Inter), Stray::Disagrees);
        let revoke = revoke_tag(mine, TagSpace::Inter);
        assert_eq!(classify(mine, revoke, TagSpace::Inter), Stray::Revoke);
    }
}
