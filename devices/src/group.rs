//! Process groups (MPI's `MPI_Group`): an ordered set of distinct job ranks.
//!
//! A [`Group`] lists job ranks in group-rank order and remembers where the
//! calling process sits in it. A communicator translates ranks through its
//! group on every operation, so both directions are cheap: group rank to job
//! rank is an index, and job rank to group rank (once per received message)
//! is a table lookup for dense groups or a binary search for sparse ones,
//! never a scan. The world's layout is stored as its size alone, so a group
//! of every rank costs O(1) memory however large the job.
//!
//! The constructors follow MPI's rules for `MPI_Group_incl`, `_excl`,
//! `_range_incl`, `_range_excl`, `_union`, `_intersection` and
//! `_difference`, including the order of the result. Where MPI calls an
//! argument erroneous, ferry returns a typed error: nothing here panics,
//! whatever the ranks or ranges given.

use std::fmt;
use std::sync::Arc;

use ferry_core::{Rank, ANY_SOURCE, PROC_NULL};

use crate::error::{ApiError, Result};

#[cfg(test)]
mod tests;

/// The most ranks a group can hold: group ranks are non-negative [`Rank`]s.
const MAX_SIZE: u32 = i32::MAX as u32 + 1;

/// Group ranks in order, for zipping with members: unlike `0..`, the range
/// cannot overflow at the last of 2^31 members.
const GROUP_RANKS: std::ops::RangeInclusive<Rank> = 0..=Rank::MAX;

/// A list whose job ranks span at most this many times its length gets a
/// direct lookup table (O(1), at most 4 slots per member); a sparser one a
/// sorted index (O(log n), 2 slots per member), so that a few ranks picked
/// from a huge job never cost a table as large as the job.
const DENSE_FACTOR: usize = 4;

/// How two groups relate (`MPI_Group_compare`'s result).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupCompare {
    /// The same members in the same order (`MPI_IDENT`).
    Ident,
    /// The same members in another order (`MPI_SIMILAR`).
    Similar,
    /// Different members (`MPI_UNEQUAL`).
    Unequal,
}

/// A process group (`MPI_Group`): an ordered set of distinct job ranks,
/// whose group ranks are `0..size` in that order.
///
/// Cheap to clone (the ranks are shared) and `Send + Sync`. A group also
/// knows the calling process, so that [`rank`](Group::rank) answers for
/// groups derived from it, including the ones the process is not in.
#[derive(Clone)]
pub struct Group {
    inner: Arc<Inner>,
}

struct Inner {
    layout: Layout,
    /// The calling process's job rank; `None` only for [`Group::empty`],
    /// which is made without asking the world. Derived groups inherit it.
    my_job_rank: Option<Rank>,
    /// Where `my_job_rank` sits in this group, computed once because
    /// `rank()` is called on every operation.
    my_rank: Option<Rank>,
}

enum Layout {
    /// Group rank `i` is job rank `i`, for `i` in `0..size`: the world, any
    /// prefix of it, and the empty group.
    Identity { size: u32 },
    /// Any other list of distinct, non-negative job ranks.
    List {
        job_ranks: Box<[Rank]>,
        index: Index,
    },
}

/// Job rank to group rank, for a [`Layout::List`].
enum Index {
    /// `table[job - base]` is the group rank of `job`, or -1 for a job rank
    /// between two members.
    Dense { base: Rank, table: Box<[Rank]> },
    /// `(job rank, group rank)` pairs, sorted by job rank.
    Sorted(Box<[(Rank, Rank)]>),
}

impl Index {
    /// The index of `job_ranks` (distinct; a repeated rank would only make
    /// the index answer for one of its positions).
    fn new(job_ranks: &[Rank]) -> Index {
        let (Some(&min), Some(&max)) = (job_ranks.iter().min(), job_ranks.iter().max()) else {
            return Index::Sorted(Box::new([]));
        };
        // i64: two arbitrary i32s are up to 2^32 apart.
        let span = usize::try_from(i64::from(max) - i64::from(min) + 1).unwrap_or(usize::MAX);
        if span <= job_ranks.len().saturating_mul(DENSE_FACTOR) {
            let mut table = vec![-1; span];
            for (group_rank, &job) in GROUP_RANKS.zip(job_ranks) {
                table[(i64::from(job) - i64::from(min)) as usize] = group_rank;
            }
            Index::Dense {
                base: min,
                table: table.into_boxed_slice(),
            }
        } else {
            let mut pairs: Vec<(Rank, Rank)> = job_ranks.iter().copied().zip(GROUP_RANKS).collect();
            pairs.sort_unstable();
            Index::Sorted(pairs.into_boxed_slice())
        }
    }

    #[inline]
    fn get(&self, job: Rank) -> Option<Rank> {
        match self {
            Index::Dense { base, table } => {
                let slot = usize::try_from(i64::from(job) - i64::from(*base)).ok()?;
                table.get(slot).copied().filter(|&g| g >= 0)
            }
            Index::Sorted(pairs) => pairs
                .binary_search_by_key(&job, |&(j, _)| j)
                .ok()
                .map(|i| pairs[i].1),
        }
    }
}

impl Layout {
    /// The layout of `job_ranks` (distinct and non-negative: every caller
    /// has checked or derived them so).
    fn from_list(job_ranks: Vec<Rank>) -> Layout {
        // A derived group that happens to be `0..n` gets the world's fast
        // paths and O(1) memory.
        if GROUP_RANKS.zip(&job_ranks).all(|(i, &j)| i == j) {
            return Layout::Identity {
                size: job_ranks.len() as u32,
            };
        }
        let index = Index::new(&job_ranks);
        Layout::List {
            job_ranks: job_ranks.into_boxed_slice(),
            index,
        }
    }

    fn size(&self) -> u32 {
        match self {
            Layout::Identity { size } => *size,
            // At most MAX_SIZE: the job ranks are distinct non-negative i32s.
            Layout::List { job_ranks, .. } => job_ranks.len() as u32,
        }
    }

    #[inline]
    fn job_of(&self, rank: Rank) -> Option<Rank> {
        let i = u32::try_from(rank).ok()?;
        match self {
            Layout::Identity { size } => (i < *size).then_some(rank),
            Layout::List { job_ranks, .. } => job_ranks.get(i as usize).copied(),
        }
    }

    #[inline]
    fn to_group(&self, job: Rank) -> Option<Rank> {
        match self {
            Layout::Identity { size } => u32::try_from(job).is_ok_and(|j| j < *size).then_some(job),
            Layout::List { index, .. } => index.get(job),
        }
    }
}

impl Group {
    fn new(layout: Layout, my_job_rank: Option<Rank>) -> Group {
        let my_rank = my_job_rank.and_then(|me| layout.to_group(me));
        Group {
            inner: Arc::new(Inner {
                layout,
                my_job_rank,
                my_rank,
            }),
        }
    }

    /// The group of every job rank in order (`MPI_COMM_WORLD`'s group), in
    /// O(1) memory. A `size` beyond what [`Rank`] can number is cut to
    /// 2^31.
    pub(crate) fn world(size: u32, my_job_rank: Rank) -> Group {
        Group::new(
            Layout::Identity {
                size: size.min(MAX_SIZE),
            },
            Some(my_job_rank),
        )
    }

    /// The group of `job_ranks`, in that order.
    ///
    /// # Errors
    /// [`ApiError::InvalidGroup`] if a job rank is negative or listed twice.
    pub(crate) fn from_job_ranks(job_ranks: Vec<Rank>, my_job_rank: Rank) -> Result<Group> {
        if job_ranks.iter().any(|&j| j < 0) {
            return Err(ApiError::InvalidGroup("a job rank is negative").into());
        }
        sorted_distinct(job_ranks.clone(), "a job rank is listed twice")?;
        Ok(Group::new(Layout::from_list(job_ranks), Some(my_job_rank)))
    }

    /// The empty group (`MPI_GROUP_EMPTY`).
    pub fn empty() -> Group {
        Group::new(Layout::Identity { size: 0 }, None)
    }

    /// A group of this process with these job ranks.
    fn derive(&self, job_ranks: Vec<Rank>) -> Group {
        Group::new(Layout::from_list(job_ranks), self.inner.my_job_rank)
    }

    /// Like [`derive`](Group::derive) for an operation on two groups: the
    /// calling process is known to at least one of them unless both are
    /// [`Group::empty`].
    fn derive2(&self, other: &Group, job_ranks: Vec<Rank>) -> Group {
        let me = self.inner.my_job_rank.or(other.inner.my_job_rank);
        Group::new(Layout::from_list(job_ranks), me)
    }

    /// The number of processes (`MPI_Group_size`).
    pub fn size(&self) -> u32 {
        self.inner.layout.size()
    }

    /// The calling process's rank in the group (`MPI_Group_rank`); `None`
    /// (`MPI_UNDEFINED`) if it is not a member.
    pub fn rank(&self) -> Option<Rank> {
        self.inner.my_rank
    }

    /// The members' job ranks, in group-rank order.
    pub fn job_ranks(&self) -> Vec<Rank> {
        self.members().collect()
    }

    /// The members' job ranks in group-rank order, without allocating
    /// (the world's layout has no list to lend).
    fn members(&self) -> impl Iterator<Item = Rank> + '_ {
        let (prefix, list): (u32, &[Rank]) = match &self.inner.layout {
            Layout::Identity { size } => (*size, &[]),
            Layout::List { job_ranks, .. } => (0, job_ranks),
        };
        // Group ranks are below MAX_SIZE, so the casts are exact.
        (0..prefix).map(|r| r as Rank).chain(list.iter().copied())
    }

    /// The job rank of group rank `rank`. `PROC_NULL` and `ANY_SOURCE` pass
    /// through unchanged, as they mean the same in every group.
    ///
    /// # Errors
    /// [`ApiError::InvalidRank`] for any other rank outside `0..size`.
    #[inline]
    pub(crate) fn to_job(&self, rank: Rank) -> Result<Rank> {
        if rank == PROC_NULL || rank == ANY_SOURCE {
            return Ok(rank);
        }
        match self.inner.layout.job_of(rank) {
            Some(job) => Ok(job),
            None => Err(self.invalid_rank(rank).into()),
        }
    }

    /// The group rank of job rank `job_rank`, `None` if it is not a member.
    /// Special ranks (`PROC_NULL`, `ANY_SOURCE`) are never members: callers
    /// that receive them handle them first.
    #[inline]
    pub(crate) fn to_group(&self, job_rank: Rank) -> Option<Rank> {
        self.inner.layout.to_group(job_rank)
    }

    /// True when group rank `i` is job rank `i` for every member (the
    /// world, a prefix of it, or the empty group): translation is the
    /// identity on valid ranks.
    pub(crate) fn is_identity(&self) -> bool {
        matches!(self.inner.layout, Layout::Identity { .. })
    }

    fn invalid_rank(&self, rank: Rank) -> ApiError {
        ApiError::InvalidRank {
            rank,
            size: self.size(),
        }
    }

    /// The group of the members at `ranks`, in that order
    /// (`MPI_Group_incl`). No ranks give the empty group.
    ///
    /// # Errors
    /// [`ApiError::InvalidRank`] for a rank outside `0..size`,
    /// [`ApiError::InvalidGroup`] for a rank listed twice.
    pub fn incl(&self, ranks: &[Rank]) -> Result<Group> {
        let job_ranks = ranks
            .iter()
            .map(|&r| {
                self.inner
                    .layout
                    .job_of(r)
                    .ok_or_else(|| self.invalid_rank(r))
            })
            .collect::<Result<Vec<Rank>, ApiError>>()?;
        sorted_distinct(ranks.to_vec(), "a rank is listed twice")?;
        Ok(self.derive(job_ranks))
    }

    /// The group of the members not at `ranks`, in this group's order
    /// (`MPI_Group_excl`).
    ///
    /// # Errors
    /// [`ApiError::InvalidRank`] for a rank outside `0..size`,
    /// [`ApiError::InvalidGroup`] for a rank listed twice.
    pub fn excl(&self, ranks: &[Rank]) -> Result<Group> {
        if let Some(&bad) = ranks
            .iter()
            .find(|&&r| self.inner.layout.job_of(r).is_none())
        {
            return Err(self.invalid_rank(bad).into());
        }
        let gone = sorted_distinct(ranks.to_vec(), "a rank is listed twice")?;
        Ok(self.without(&gone))
    }

    /// This group minus the group ranks in `gone` (sorted, distinct).
    fn without(&self, gone: &[Rank]) -> Group {
        if gone.is_empty() {
            return self.clone();
        }
        let kept = GROUP_RANKS
            .zip(self.members())
            .filter(|(g, _)| gone.binary_search(g).is_err())
            .map(|(_, job)| job)
            .collect();
        self.derive(kept)
    }

    /// The group of the members at the ranks the `(first, last, stride)`
    /// triplets list, in that order (`MPI_Group_range_incl`): each triplet
    /// gives `first, first + stride, ...` up to and including `last` if the
    /// stride lands on it. Strides may be negative (`first >= last`).
    ///
    /// # Errors
    /// [`ApiError::InvalidGroup`] for a stride of 0, a `first` or `last`
    /// outside `0..size`, a stride that leads away from `last` (as MPICH
    /// and Open MPI, which reject `first > last` with a positive stride and
    /// the converse), or a rank listed twice.
    pub fn range_incl(&self, ranges: &[(Rank, Rank, Rank)]) -> Result<Group> {
        let ranks = self.expand(ranges)?;
        // `expand` checked every rank, so nothing is filtered out.
        let job_ranks = ranks
            .iter()
            .filter_map(|&r| self.inner.layout.job_of(r))
            .collect();
        Ok(self.derive(job_ranks))
    }

    /// The group of the members not at the ranks the triplets list, in this
    /// group's order (`MPI_Group_range_excl`); the triplets as in
    /// [`range_incl`](Group::range_incl).
    ///
    /// # Errors
    /// As [`range_incl`](Group::range_incl).
    pub fn range_excl(&self, ranges: &[(Rank, Rank, Rank)]) -> Result<Group> {
        let ranks = self.expand(ranges)?;
        let gone = sorted_distinct(ranks, "a rank is listed twice")?;
        Ok(self.without(&gone))
    }

    /// The group ranks the triplets list, in order, each valid and none
    /// twice.
    fn expand(&self, ranges: &[(Rank, Rank, Rank)]) -> Result<Vec<Rank>> {
        // i64 throughout: `last - first` and the running total overflow i32.
        let size = i64::from(self.size());
        // Count before listing, so that ranges naming more ranks than there
        // are members (which must repeat one) fail without allocating them.
        let mut total: i64 = 0;
        for &(first, last, stride) in ranges {
            let (first, last, stride) = (i64::from(first), i64::from(last), i64::from(stride));
            if stride == 0 {
                return Err(ApiError::InvalidGroup("a range has stride 0").into());
            }
            if !(0..size).contains(&first) || !(0..size).contains(&last) {
                return Err(ApiError::InvalidGroup("a range leaves the group").into());
            }
            if (stride > 0 && first > last) || (stride < 0 && first < last) {
                return Err(ApiError::InvalidGroup(
                    "a range's stride leads away from its last rank",
                )
                .into());
            }
            // Signs agree, so truncation is MPI's floor, and count >= 1.
            total += (last - first) / stride + 1;
            if total > size {
                return Err(ApiError::InvalidGroup("a rank is listed twice").into());
            }
        }
        let mut ranks = Vec::with_capacity(total as usize);
        for &(first, last, stride) in ranges {
            let (first, last, stride) = (i64::from(first), i64::from(last), i64::from(stride));
            let count = (last - first) / stride + 1;
            // Every rank lies between first and last, so fits a Rank.
            ranks.extend((0..count).map(|k| (first + k * stride) as Rank));
        }
        sorted_distinct(ranks.clone(), "a rank is listed twice")?;
        Ok(ranks)
    }

    /// Every member of this group, then the members of `other` not in it,
    /// each part in its own group's order (`MPI_Group_union`).
    pub fn union(&self, other: &Group) -> Group {
        if let (Layout::Identity { size: a }, Layout::Identity { size: b }) =
            (&self.inner.layout, &other.inner.layout)
        {
            return self.derive2_identity(other, (*a).max(*b));
        }
        let job_ranks = self
            .members()
            .chain(other.members().filter(|&j| self.to_group(j).is_none()))
            .collect();
        self.derive2(other, job_ranks)
    }

    /// The members of this group that are also in `other`, in this group's
    /// order (`MPI_Group_intersection`).
    pub fn intersection(&self, other: &Group) -> Group {
        if let (Layout::Identity { size: a }, Layout::Identity { size: b }) =
            (&self.inner.layout, &other.inner.layout)
        {
            return self.derive2_identity(other, (*a).min(*b));
        }
        let job_ranks = self
            .members()
            .filter(|&j| other.to_group(j).is_some())
            .collect();
        self.derive2(other, job_ranks)
    }

    /// The members of this group that are not in `other`, in this group's
    /// order (`MPI_Group_difference`).
    pub fn difference(&self, other: &Group) -> Group {
        let job_ranks = self
            .members()
            .filter(|&j| other.to_group(j).is_none())
            .collect();
        self.derive2(other, job_ranks)
    }

    /// The world-layout result of an operation on two world-layout groups,
    /// without listing their members.
    fn derive2_identity(&self, other: &Group, size: u32) -> Group {
        let me = self.inner.my_job_rank.or(other.inner.my_job_rank);
        Group::new(Layout::Identity { size }, me)
    }

    /// The ranks in `other` of the members at `ranks` of this group
    /// (`MPI_Group_translate_ranks`): `None` (`MPI_UNDEFINED`) for a member
    /// not in `other`; `PROC_NULL` translates to `Some(PROC_NULL)`.
    ///
    /// # Errors
    /// [`ApiError::InvalidRank`] for a rank outside `0..size` other than
    /// `PROC_NULL` (`ANY_SOURCE` included: it names no process).
    pub fn translate_ranks(&self, ranks: &[Rank], other: &Group) -> Result<Vec<Option<Rank>>> {
        let translated = ranks
            .iter()
            .map(|&r| {
                if r == PROC_NULL {
                    return Ok(Some(PROC_NULL));
                }
                let job = self
                    .inner
                    .layout
                    .job_of(r)
                    .ok_or_else(|| self.invalid_rank(r))?;
                Ok(other.to_group(job))
            })
            .collect::<Result<Vec<_>, ApiError>>()?;
        Ok(translated)
    }

    /// How this group relates to `other` (`MPI_Group_compare`): the same
    /// members in the same order, in another order, or different members.
    /// Which process holds the groups plays no part.
    pub fn compare(&self, other: &Group) -> GroupCompare {
        if Arc::ptr_eq(&self.inner, &other.inner) {
            return GroupCompare::Ident;
        }
        if self.size() != other.size() {
            return GroupCompare::Unequal;
        }
        // Layouts are canonical: an identity list is always stored as
        // Identity, so two same-sized Identity groups are the whole story.
        if self.is_identity() && other.is_identity() {
            return GroupCompare::Ident;
        }
        if self.members().eq(other.members()) {
            return GroupCompare::Ident;
        }
        // Same size and distinct members: inclusion one way is equality.
        if self.members().all(|j| other.to_group(j).is_some()) {
            GroupCompare::Similar
        } else {
            GroupCompare::Unequal
        }
    }
}

impl fmt::Debug for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Group");
        d.field("rank", &self.rank());
        match &self.inner.layout {
            Layout::Identity { size } => d.field("job_ranks", &(0..*size)),
            Layout::List { job_ranks, .. } => d.field("job_ranks", job_ranks),
        };
        d.finish()
    }
}

/// `ranks`, sorted, if no rank repeats.
///
/// # Errors
/// [`ApiError::InvalidGroup`] with `what` otherwise.
fn sorted_distinct(mut ranks: Vec<Rank>, what: &'static str) -> Result<Vec<Rank>> {
    ranks.sort_unstable();
    if ranks.windows(2).any(|w| w[0] == w[1]) {
        return Err(ApiError::InvalidGroup(what).into());
    }
    Ok(ranks)
}
