//! Each operation against MPI's definitions, every error case, and a
//! proptest against a naive `Vec` model.

use std::fmt::Debug;

use proptest::prelude::*;

use super::*;
use crate::Error;

/// Which typed error a call gave, without its message (the model cannot
/// predict which of two problems an argument is reported for first).
#[derive(Debug, PartialEq, Eq)]
enum Fail {
    Rank { rank: Rank, size: u32 },
    Group,
}

fn fail<T: Debug>(r: Result<T>) -> Fail {
    match r {
        Err(Error::Api(ApiError::InvalidRank { rank, size })) => Fail::Rank { rank, size },
        Err(Error::Api(ApiError::InvalidGroup(_))) => Fail::Group,
        other => panic!("expected a group error, got {other:?}"),
    }
}

fn group_fail<T: Debug>(r: Result<T>) -> &'static str {
    match r {
        Err(Error::Api(ApiError::InvalidGroup(what))) => what,
        other => panic!("expected InvalidGroup, got {other:?}"),
    }
}

fn jobs(g: &Result<Group>) -> Vec<Rank> {
    g.as_ref().expect("a group").job_ranks()
}

#[test]
fn send_sync_clone_debug() {
    fn check<T: Send + Sync + Clone + Debug>() {}
    check::<Group>();
    check::<GroupCompare>();
    let g = Group::world(4, 1).incl(&[3, 1]).unwrap();
    assert_eq!(
        format!("{g:?}"),
        "Group { rank: Some(1), job_ranks: [3, 1] }"
    );
    assert_eq!(
        format!("{:?}", Group::world(4, 1)),
        "Group { rank: Some(1), job_ranks: 0..4 }"
    );
}

#[test]
fn world_translates_as_identity() {
    let w = Group::world(4, 2);
    assert_eq!(w.size(), 4);
    assert_eq!(w.rank(), Some(2));
    assert!(w.is_identity());
    assert_eq!(w.job_ranks(), [0, 1, 2, 3]);
    for r in 0..4 {
        assert_eq!(w.to_job(r).unwrap(), r);
        assert_eq!(w.to_group(r), Some(r));
    }
    assert_eq!(w.to_job(PROC_NULL).unwrap(), PROC_NULL);
    assert_eq!(w.to_job(ANY_SOURCE).unwrap(), ANY_SOURCE);
    for bad in [4, -3, i32::MIN, i32::MAX] {
        assert_eq!(fail(w.to_job(bad)), Fail::Rank { rank: bad, size: 4 });
    }
    for absent in [4, PROC_NULL, ANY_SOURCE, i32::MIN, i32::MAX] {
        assert_eq!(w.to_group(absent), None);
    }
    // A process outside the world it is given (never the case in a job,
    // but nothing should assume it).
    assert_eq!(Group::world(4, 9).rank(), None);
}

#[test]
fn world_is_cut_to_the_rank_space() {
    let w = Group::world(u32::MAX, 0);
    assert_eq!(w.size(), 1 << 31);
    assert_eq!(w.to_job(i32::MAX).unwrap(), i32::MAX);
    assert_eq!(w.to_group(i32::MAX), Some(i32::MAX));
    // Stride i32::MAX from 0 lands exactly on the last rank.
    let ends = w.range_incl(&[(0, i32::MAX, i32::MAX)]).unwrap();
    assert_eq!(ends.job_ranks(), [0, i32::MAX]);
    assert_eq!(ends.to_group(i32::MAX), Some(1));
    assert_eq!(ends.to_group(1), None);
    assert_eq!(ends.rank(), Some(0));
}

#[test]
fn from_job_ranks_checks_and_canonicalises() {
    let g = Group::from_job_ranks(vec![4, 0, 2], 2).unwrap();
    assert_eq!(g.job_ranks(), [4, 0, 2]);
    assert_eq!(g.rank(), Some(2));
    assert!(!g.is_identity());
    assert_eq!(g.to_job(0).unwrap(), 4);
    assert_eq!(g.to_group(4), Some(0));
    assert_eq!(g.to_group(1), None);
    assert_eq!(fail(g.to_job(3)), Fail::Rank { rank: 3, size: 3 });

    // Listing 0..n is the world's layout, with its fast paths.
    let prefix = Group::from_job_ranks(vec![0, 1, 2], 7).unwrap();
    assert!(prefix.is_identity());
    assert_eq!(prefix.rank(), None);
    assert_eq!(prefix.compare(&Group::world(3, 0)), GroupCompare::Ident);

    assert_eq!(
        group_fail(Group::from_job_ranks(vec![1, -1], 1)),
        "a job rank is negative"
    );
    assert_eq!(
        group_fail(Group::from_job_ranks(vec![i32::MIN], 1)),
        "a job rank is negative"
    );
    assert_eq!(
        group_fail(Group::from_job_ranks(vec![3, 1, 3], 1)),
        "a job rank is listed twice"
    );
}

#[test]
fn dense_and_sparse_indexes_agree() {
    // Dense: a table from 1000 on.
    let dense = Group::from_job_ranks(vec![1003, 1000, 1001], 1001).unwrap();
    assert!(matches!(
        dense.inner.layout,
        Layout::List {
            index: Index::Dense { .. },
            ..
        }
    ));
    // Sparse: a table would be 2^31 slots.
    let sparse = Group::from_job_ranks(vec![i32::MAX, 1001, 0], 1001).unwrap();
    assert!(matches!(
        sparse.inner.layout,
        Layout::List {
            index: Index::Sorted(_),
            ..
        }
    ));
    assert_eq!(dense.rank(), Some(2));
    assert_eq!(sparse.rank(), Some(1));
    for (g, members) in [(&dense, [1003, 1000, 1001]), (&sparse, [i32::MAX, 1001, 0])] {
        for (i, &j) in (0..).zip(&members) {
            assert_eq!(g.to_job(i).unwrap(), j);
            assert_eq!(g.to_group(j), Some(i));
        }
        for absent in [999, 1002, 1004, 1, i32::MAX - 1, -1, i32::MIN] {
            assert_eq!(g.to_group(absent), None, "{absent} in {g:?}");
        }
    }
}

#[test]
fn empty_group() {
    let e = Group::empty();
    assert_eq!(e.size(), 0);
    assert_eq!(e.rank(), None);
    assert!(e.job_ranks().is_empty());
    assert_eq!(fail(e.to_job(0)), Fail::Rank { rank: 0, size: 0 });
    assert_eq!(e.incl(&[]).unwrap().size(), 0);
    assert_eq!(e.compare(&Group::empty()), GroupCompare::Ident);
    // The empty group does not know the process; the other operand does.
    let w = Group::world(3, 1);
    assert_eq!(e.union(&w).rank(), Some(1));
    assert_eq!(e.union(&w).compare(&w), GroupCompare::Ident);
    assert_eq!(w.difference(&e).compare(&w), GroupCompare::Ident);
    assert_eq!(e.intersection(&w).size(), 0);
}

#[test]
fn incl_keeps_the_listed_order() {
    let w = Group::world(8, 5);
    let g = w.incl(&[5, 2, 7]);
    assert_eq!(jobs(&g), [5, 2, 7]);
    assert_eq!(g.as_ref().unwrap().rank(), Some(0));
    // Ranks of a derived group are that group's: rank 1 of g is job rank 2.
    let h = g.unwrap().incl(&[2, 1]).unwrap();
    assert_eq!(h.job_ranks(), [7, 2]);
    assert_eq!(h.rank(), None);
    assert_eq!(
        w.incl(&[]).unwrap().compare(&Group::empty()),
        GroupCompare::Ident
    );

    assert_eq!(fail(w.incl(&[1, 8])), Fail::Rank { rank: 8, size: 8 });
    assert_eq!(
        fail(w.incl(&[PROC_NULL])),
        Fail::Rank {
            rank: PROC_NULL,
            size: 8
        }
    );
    assert_eq!(
        fail(w.incl(&[i32::MIN])),
        Fail::Rank {
            rank: i32::MIN,
            size: 8
        }
    );
    // An invalid rank is reported before a repeat.
    assert_eq!(fail(w.incl(&[1, 1, 9])), Fail::Rank { rank: 9, size: 8 });
    assert_eq!(group_fail(w.incl(&[3, 1, 3])), "a rank is listed twice");
}

#[test]
fn excl_keeps_the_group_order() {
    let g = Group::world(8, 3).incl(&[7, 3, 0, 5]).unwrap();
    let h = g.excl(&[2, 0]);
    assert_eq!(jobs(&h), [3, 5]);
    assert_eq!(h.unwrap().rank(), Some(0));
    assert_eq!(g.excl(&[]).unwrap().compare(&g), GroupCompare::Ident);

    let none = g.excl(&[3, 1, 0, 2]).unwrap();
    assert_eq!(none.size(), 0);
    assert_eq!(none.rank(), None);
    assert_eq!(none.compare(&Group::empty()), GroupCompare::Ident);

    assert_eq!(fail(g.excl(&[4])), Fail::Rank { rank: 4, size: 4 });
    assert_eq!(fail(g.excl(&[-1])), Fail::Rank { rank: -1, size: 4 });
    assert_eq!(
        fail(g.excl(&[i32::MAX])),
        Fail::Rank {
            rank: i32::MAX,
            size: 4
        }
    );
    assert_eq!(group_fail(g.excl(&[1, 1])), "a rank is listed twice");
}

#[test]
fn range_incl_follows_the_formula() {
    let w = Group::world(10, 4);
    // first, first + stride, ..., first + floor((last - first) / stride) * stride
    assert_eq!(
        jobs(&w.range_incl(&[(6, 7, 1), (1, 6, 2), (0, 9, 4)])),
        [6, 7, 1, 3, 5, 0, 4, 8]
    );
    let down = w.range_incl(&[(9, 0, -3)]);
    assert_eq!(jobs(&down), [9, 6, 3, 0]);
    assert_eq!(down.unwrap().rank(), None);
    assert_eq!(jobs(&w.range_incl(&[(8, 1, -4)])), [8, 4]);
    assert_eq!(jobs(&w.range_incl(&[(5, 5, -7)])), [5]);
    assert_eq!(jobs(&w.range_incl(&[(0, 9, i32::MAX)])), [0]);
    assert_eq!(jobs(&w.range_incl(&[(9, 0, i32::MIN)])), [9]);
    assert_eq!(w.range_incl(&[]).unwrap().size(), 0);
    // Ranges of a derived group name its ranks.
    let g = w.incl(&[9, 8, 7, 6]).unwrap();
    assert_eq!(jobs(&g.range_incl(&[(3, 0, -2)])), [6, 8]);
}

#[test]
fn range_excl_keeps_the_group_order() {
    let w = Group::world(10, 4);
    assert_eq!(jobs(&w.range_excl(&[(0, 9, 2)])), [1, 3, 5, 7, 9]);
    assert_eq!(jobs(&w.range_excl(&[(9, 0, -3)])), [1, 2, 4, 5, 7, 8]);
    assert_eq!(w.range_excl(&[]).unwrap().compare(&w), GroupCompare::Ident);
    let none = w.range_excl(&[(9, 0, -1)]).unwrap();
    assert_eq!(none.size(), 0);
    assert_eq!(none.rank(), None);
}

#[test]
fn bad_ranges_are_invalid_group() {
    let w = Group::world(10, 0);
    for op in [Group::range_incl, Group::range_excl] {
        assert_eq!(group_fail(op(&w, &[(0, 9, 0)])), "a range has stride 0");
        for leaves in [(0, 10, 1), (-1, 3, 1), (10, 0, -1), (i32::MIN, i32::MAX, 1)] {
            assert_eq!(group_fail(op(&w, &[leaves])), "a range leaves the group");
        }
        for away in [(0, 9, -1), (9, 0, 1), (0, 9, i32::MIN), (9, 0, i32::MAX)] {
            assert_eq!(
                group_fail(op(&w, &[away])),
                "a range's stride leads away from its last rank"
            );
        }
        assert_eq!(
            group_fail(op(&w, &[(0, 4, 2), (4, 1, -1)])),
            "a rank is listed twice"
        );
        // A million triplets: refused once they list more ranks than
        // members, not after expanding them all.
        let many = vec![(0, 0, 1); 1_000_000];
        assert_eq!(group_fail(op(&w, &many)), "a rank is listed twice");
        // 2^31 + 1 ranks of a 2^31-member group, refused before listing
        // (8 GiB) any of them.
        let world = Group::world(u32::MAX, 0);
        let huge = [(0, i32::MAX, 1), (5, 5, 1)];
        assert_eq!(group_fail(op(&world, &huge)), "a rank is listed twice");
    }
}

#[test]
fn set_operations_follow_mpi_order() {
    let w = Group::world(8, 3);
    let a = w.incl(&[1, 3, 5]).unwrap();
    let b = w.incl(&[5, 0, 3, 4]).unwrap();
    // All of the first group, then the second's members not in it.
    assert_eq!(a.union(&b).job_ranks(), [1, 3, 5, 0, 4]);
    assert_eq!(b.union(&a).job_ranks(), [5, 0, 3, 4, 1]);
    assert_eq!(a.intersection(&b).job_ranks(), [3, 5]);
    assert_eq!(b.intersection(&a).job_ranks(), [5, 3]);
    assert_eq!(a.difference(&b).job_ranks(), [1]);
    assert_eq!(b.difference(&a).job_ranks(), [0, 4]);
    assert_eq!(a.union(&b).rank(), Some(1));
    assert_eq!(b.difference(&a).rank(), None);
    assert_eq!(
        a.difference(&a).compare(&Group::empty()),
        GroupCompare::Ident
    );

    // World-layout operands stay in the world's layout.
    let small = Group::world(3, 1);
    let u = w.union(&small);
    assert!(u.is_identity() && u.size() == 8 && u.rank() == Some(3));
    let i = w.intersection(&small);
    assert!(i.is_identity() && i.size() == 3 && i.rank().is_none());
    assert_eq!(w.difference(&small).job_ranks(), [3, 4, 5, 6, 7]);
    assert_eq!(small.difference(&w).size(), 0);
}

#[test]
fn translate_ranks_between_groups() {
    let w = Group::world(8, 0);
    let a = w.incl(&[6, 2, 4]).unwrap();
    let b = w.incl(&[4, 6]).unwrap();
    assert_eq!(
        a.translate_ranks(&[0, 1, 2, PROC_NULL], &b).unwrap(),
        [Some(1), None, Some(0), Some(PROC_NULL)]
    );
    assert_eq!(a.translate_ranks(&[2, 0], &w).unwrap(), [Some(4), Some(6)]);
    assert!(a.translate_ranks(&[], &b).unwrap().is_empty());
    assert_eq!(a.translate_ranks(&[1], &Group::empty()).unwrap(), [None]);
    for bad in [3, ANY_SOURCE, -7, i32::MIN, i32::MAX] {
        assert_eq!(
            fail(a.translate_ranks(&[0, bad], &b)),
            Fail::Rank { rank: bad, size: 3 }
        );
    }
}

#[test]
fn compare_ident_similar_unequal() {
    let w = Group::world(6, 0);
    let a = w.incl(&[1, 2, 3]).unwrap();
    assert_eq!(a.compare(&a.clone()), GroupCompare::Ident);
    assert_eq!(
        a.compare(&w.range_incl(&[(1, 3, 1)]).unwrap()),
        GroupCompare::Ident
    );
    assert_eq!(
        a.compare(&w.incl(&[3, 1, 2]).unwrap()),
        GroupCompare::Similar
    );
    assert_eq!(
        a.compare(&w.incl(&[1, 2, 4]).unwrap()),
        GroupCompare::Unequal
    );
    assert_eq!(a.compare(&w.incl(&[1, 2]).unwrap()), GroupCompare::Unequal);
    assert_eq!(w.compare(&Group::world(6, 5)), GroupCompare::Ident);
    assert_eq!(w.compare(&Group::world(7, 0)), GroupCompare::Unequal);
    let reversed = w.range_incl(&[(5, 0, -1)]).unwrap();
    assert_eq!(w.compare(&reversed), GroupCompare::Similar);
    assert_eq!(reversed.compare(&w), GroupCompare::Similar);
    assert_eq!(a.compare(&Group::empty()), GroupCompare::Unequal);
}

// ---- proptest against a naive model ----

/// A group as the model sees it: its job ranks and the calling process.
#[derive(Debug, Clone)]
struct Model {
    jobs: Vec<Rank>,
    me: Rank,
}

impl Model {
    fn group(&self) -> Group {
        Group::from_job_ranks(self.jobs.clone(), self.me).unwrap()
    }

    fn pos(&self, job: Rank) -> Option<Rank> {
        self.jobs.iter().position(|&j| j == job).map(|i| i as Rank)
    }

    fn size(&self) -> u32 {
        self.jobs.len() as u32
    }

    fn derive(&self, jobs: Vec<Rank>) -> Model {
        Model { jobs, me: self.me }
    }

    fn valid(&self, r: Rank) -> bool {
        (0..self.jobs.len() as i64).contains(&i64::from(r))
    }

    fn incl(&self, ranks: &[Rank]) -> Result<Model, Fail> {
        if let Some(&rank) = ranks.iter().find(|&&r| !self.valid(r)) {
            return Err(Fail::Rank {
                rank,
                size: self.size(),
            });
        }
        if (1..ranks.len()).any(|i| ranks[..i].contains(&ranks[i])) {
            return Err(Fail::Group);
        }
        Ok(self.derive(ranks.iter().map(|&r| self.jobs[r as usize]).collect()))
    }

    fn excl(&self, ranks: &[Rank]) -> Result<Model, Fail> {
        self.incl(ranks)?;
        Ok(self.derive(
            (0..)
                .zip(&self.jobs)
                .filter(|(i, _)| !ranks.contains(i))
                .map(|(_, &j)| j)
                .collect(),
        ))
    }

    fn expand(&self, ranges: &[(Rank, Rank, Rank)]) -> Result<Vec<Rank>, Fail> {
        let mut out = Vec::new();
        for &(first, last, stride) in ranges {
            if stride == 0 || !self.valid(first) || !self.valid(last) {
                return Err(Fail::Group);
            }
            if (stride > 0) != (first <= last) && first != last {
                return Err(Fail::Group);
            }
            let (mut r, last, stride) = (i64::from(first), i64::from(last), i64::from(stride));
            while (stride > 0 && r <= last) || (stride < 0 && r >= last) {
                out.push(r as Rank);
                r += stride;
            }
        }
        // Every rank is valid, so `incl` can only fail on a repeat.
        self.incl(&out).map_err(|_| Fail::Group)?;
        Ok(out)
    }

    fn range_incl(&self, ranges: &[(Rank, Rank, Rank)]) -> Result<Model, Fail> {
        self.incl(&self.expand(ranges)?)
    }

    fn range_excl(&self, ranges: &[(Rank, Rank, Rank)]) -> Result<Model, Fail> {
        self.excl(&self.expand(ranges)?)
    }

    fn union(&self, other: &Model) -> Model {
        let mut jobs = self.jobs.clone();
        jobs.extend(other.jobs.iter().filter(|j| !self.jobs.contains(j)));
        self.derive(jobs)
    }

    fn intersection(&self, other: &Model) -> Model {
        self.derive(
            self.jobs
                .iter()
                .copied()
                .filter(|j| other.jobs.contains(j))
                .collect(),
        )
    }

    fn difference(&self, other: &Model) -> Model {
        self.derive(
            self.jobs
                .iter()
                .copied()
                .filter(|j| !other.jobs.contains(j))
                .collect(),
        )
    }

    fn translate(&self, ranks: &[Rank], other: &Model) -> Result<Vec<Option<Rank>>, Fail> {
        ranks
            .iter()
            .map(|&r| {
                if r == PROC_NULL {
                    Ok(Some(PROC_NULL))
                } else if self.valid(r) {
                    Ok(other.pos(self.jobs[r as usize]))
                } else {
                    Err(Fail::Rank {
                        rank: r,
                        size: self.size(),
                    })
                }
            })
            .collect()
    }

    fn compare(&self, other: &Model) -> GroupCompare {
        let (mut a, mut b) = (self.jobs.clone(), other.jobs.clone());
        if a == b {
            return GroupCompare::Ident;
        }
        a.sort_unstable();
        b.sort_unstable();
        if a == b {
            GroupCompare::Similar
        } else {
            GroupCompare::Unequal
        }
    }
}

/// Job ranks that overlap between draws: the dense universe shares 0, 1, 5
/// and 7 with the sparse one.
const SPARSE: [Rank; 10] = [
    0,
    1,
    5,
    7,
    100,
    1000,
    65_536,
    1 << 20,
    i32::MAX - 1,
    i32::MAX,
];

fn job_list() -> impl Strategy<Value = Vec<Rank>> {
    prop_oneof![
        (0..12 as Rank).prop_map(|n| (0..n).collect()),
        prop::sample::subsequence((0..24).collect::<Vec<Rank>>(), 0..=24).prop_shuffle(),
        prop::sample::subsequence(SPARSE.to_vec(), 0..=SPARSE.len()).prop_shuffle(),
    ]
}

fn model() -> impl Strategy<Value = Model> {
    let me = prop_oneof![0..26 as Rank, prop::sample::select(SPARSE.to_vec())];
    (job_list(), me).prop_map(|(jobs, me)| Model { jobs, me })
}

/// Ranks around `0..size`, and the special and extreme ones.
fn rank_list() -> impl Strategy<Value = Vec<Rank>> {
    let rank = prop_oneof![
        8 => -2..27 as Rank,
        1 => prop::sample::select(vec![PROC_NULL, ANY_SOURCE, i32::MIN, i32::MAX]),
    ];
    prop::collection::vec(rank, 0..8)
}

fn ranges() -> impl Strategy<Value = Vec<(Rank, Rank, Rank)>> {
    let stride = prop_oneof![6 => -5..6 as Rank, 1 => Just(i32::MIN), 1 => Just(i32::MAX)];
    prop::collection::vec((-1..26 as Rank, -1..26 as Rank, stride), 0..4)
}

fn same(got: Result<Group>, want: Result<Model, Fail>) -> Result<(), TestCaseError> {
    match (got, want) {
        (Ok(g), Ok(m)) => check_group(&g, &m),
        (got, Err(want)) => {
            prop_assert_eq!(fail(got), want);
            Ok(())
        }
        (Err(e), Ok(m)) => Err(TestCaseError::fail(format!("{e} instead of {m:?}"))),
    }
}

/// `g` holds `m`'s ranks, knows `m`'s process, and translates both ways.
fn check_group(g: &Group, m: &Model) -> Result<(), TestCaseError> {
    prop_assert_eq!(g.job_ranks(), m.jobs.clone());
    prop_assert_eq!(g.size(), m.size());
    prop_assert_eq!(g.rank(), m.pos(m.me));
    prop_assert_eq!(
        g.is_identity(),
        m.jobs.iter().copied().eq(0..m.size() as Rank)
    );
    for (i, &j) in (0..).zip(&m.jobs) {
        prop_assert_eq!(g.to_job(i).unwrap(), j);
        prop_assert_eq!(g.to_group(j), Some(i));
    }
    let probes = (-2..30)
        .chain(SPARSE)
        .chain([i32::MIN, i32::MAX - 2, ANY_SOURCE]);
    for j in probes {
        prop_assert_eq!(g.to_group(j), m.pos(j), "to_group({})", j);
        if let Some(i) = g.to_group(j) {
            prop_assert_eq!(g.to_job(i).unwrap(), j);
        }
    }
    for r in [PROC_NULL, ANY_SOURCE] {
        prop_assert_eq!(g.to_job(r).unwrap(), r);
    }
    for r in [-3, m.size() as Rank, i32::MIN, i32::MAX] {
        prop_assert_eq!(
            fail(g.to_job(r)),
            Fail::Rank {
                rank: r,
                size: m.size()
            }
        );
    }
    Ok(())
}

proptest! {
    #[test]
    fn prop_construction(m in model()) {
        check_group(&m.group(), &m)?;
        // The same list reached through incl on the world.
        if let Some(&max) = m.jobs.iter().max() {
            if max < 64 {
                let world = Group::world(64, m.me);
                same(world.incl(&m.jobs), Ok(m.clone()))?;
            }
        }
    }

    #[test]
    fn prop_set_operations(a in model(), b in model()) {
        let (ga, gb) = (a.group(), b.group());
        check_group(&ga.union(&gb), &a.union(&b))?;
        check_group(&ga.intersection(&gb), &a.intersection(&b))?;
        check_group(&ga.difference(&gb), &a.difference(&b))?;
        prop_assert_eq!(ga.compare(&gb), a.compare(&b));
        prop_assert_eq!(gb.compare(&ga), b.compare(&a));
    }

    #[test]
    fn prop_incl_excl_translate(a in model(), b in model(), ranks in rank_list()) {
        let (ga, gb) = (a.group(), b.group());
        same(ga.incl(&ranks), a.incl(&ranks))?;
        same(ga.excl(&ranks), a.excl(&ranks))?;
        match (ga.translate_ranks(&ranks, &gb), a.translate(&ranks, &b)) {
            (Ok(got), Ok(want)) => prop_assert_eq!(got, want),
            (got, Err(want)) => prop_assert_eq!(fail(got), want),
            (Err(e), Ok(want)) => prop_assert!(false, "{} instead of {:?}", e, want),
        }
    }

    #[test]
    fn prop_ranges(a in model(), ranges in ranges()) {
        let ga = a.group();
        same(ga.range_incl(&ranges), a.range_incl(&ranges))?;
        same(ga.range_excl(&ranges), a.range_excl(&ranges))?;
    }

    #[test]
    fn prop_compare_permuted(
        (jobs, shuffled) in job_list().prop_flat_map(|j| (Just(j.clone()), Just(j).prop_shuffle())),
    ) {
        let a = Model { jobs, me: 0 };
        let b = Model { jobs: shuffled, me: 0 };
        let want = if a.jobs == b.jobs { GroupCompare::Ident } else { GroupCompare::Similar };
        prop_assert_eq!(a.group().compare(&b.group()), want);
        prop_assert_eq!(a.compare(&b), want);
    }
}
