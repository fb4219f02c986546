//! Collectives on an intercommunicator (MPI 4.1 §6.2.2): two disjoint
//! groups, each member's ranks naming the other group's members.
//!
//! The builders here are direct, written for correctness over speed:
//! - **pairwise rounds** (barrier, allgather, alltoall): with `m` the larger
//!   group's size, in round `i` local rank `r` receives from remote rank
//!   `(r - i) mod m` and sends to remote rank `(r + i) mod m`, skipping
//!   ranks the remote group lacks (MPICH's `MPIR_Alltoall_inter_pairwise_exchange`).
//!   Both groups number the rounds alike, so local `r` sends to remote `d`
//!   in the very round in which `d` receives from `r`: every round
//!   completes once every member reaches it, and a pair meets once per
//!   call, so messages of one tag never overtake each other.
//! - **rooted** (bcast, gather, scatter, reduce): the root talks to each
//!   remote member in turn; the root's own group does nothing.
//! - **leader-based** (allreduce, reduce-scatter): each group reduces to
//!   its rank 0 in rank order, the two leaders swap their vectors, and
//!   each leader hands its group the result (the whole vector, or each
//!   member's block by its own group's counts, which the other group never
//!   needs to know; MPICH's `MPIR_Reduce_scatter_inter_remote_reduce_local_scatter`).
//!
//! A slot is lent to one send or receive at a time, so every round moves
//! at most one message in and one out of any slot. Builder ranks are
//! `0..local` for the local group and `local..local + remote` for the
//! remote one.
//!
//! Tags: both groups number their calls on the intercommunicator alike
//! (MPI's rule that every member calls its collectives in the same order),
//! and the signature is the call's kind alone, in [`TagSpace::Inter`].

use std::sync::Arc;

use super::algo::{kind_of, source, whole};
use super::schedule::{length_error, Builder, Region, SlotId, INPUT, OUTPUT};
use super::signature::{Signature, TagSpace};
use super::{Collective, Counts, Datatype, ReduceOp, Schedule};
use crate::buffer::Buf;
use crate::envelope::{ContextId, Rank, Tag};
use crate::error::{Result, UsageError};

/// A rooted collective's `root` at the member that is the root
/// (`MPI_ROOT`).
pub const INTER_ROOT: u32 = u32::MAX;
/// A rooted collective's `root` at the other members of the root's group
/// (`MPI_PROC_NULL`): they take no part.
pub const INTER_IDLE: u32 = u32::MAX - 1;

/// An intercommunicator as the builders see it.
#[derive(Debug, Clone)]
pub struct InterTeam {
    /// The context its collectives travel on.
    pub context: ContextId,
    /// This process's rank in the local group.
    pub rank: u32,
    /// The local group's job ranks, by local rank.
    pub local: Arc<[Rank]>,
    /// The remote group's job ranks, by remote rank.
    pub remote: Arc<[Rank]>,
}

/// The two groups' sizes and this member's rank.
#[derive(Debug, Clone, Copy)]
struct Sides {
    nl: u32,
    nr: u32,
    r: u32,
}

impl Sides {
    /// The builder rank of remote rank `j`.
    fn remote(self, j: u32) -> u32 {
        self.nl + j
    }

    /// Round `i` of the pairwise exchange: the remote ranks this member
    /// receives from and sends to (`None`: the remote group lacks it).
    fn pair(self, i: u32) -> (Option<u32>, Option<u32>) {
        let m = self.nl.max(self.nr);
        let from = (self.r + m - i % m) % m;
        let to = (self.r + i) % m;
        (
            (from < self.nr).then_some(from),
            (to < self.nr).then_some(to),
        )
    }

    fn rounds(self) -> u32 {
        self.nl.max(self.nr)
    }
}

/// What a member does in a rooted collective.
#[derive(Debug, Clone, Copy)]
enum Role {
    Root,
    Idle,
    /// Sends to or receives from this remote rank, the root.
    Leaf(u32),
}

fn role(root: u32, s: Sides) -> Result<Role> {
    match root {
        INTER_ROOT => Ok(Role::Root),
        INTER_IDLE => Ok(Role::Idle),
        k if k < s.nr => Ok(Role::Leaf(k)),
        k => Err(UsageError::InvalidRank {
            rank: i32::try_from(k).unwrap_or(i32::MAX),
            size: s.nr,
        }
        .into()),
    }
}

/// Builds one collective call on an intercommunicator; `seq` is its
/// sequence number there. A rooted collective's `root` is [`INTER_ROOT`],
/// [`INTER_IDLE`] or the root's rank in the remote group; counts and
/// blocks of the receiving side are per remote rank.
///
/// # Errors
/// [`UsageError::InvalidRank`] for a bad root or an empty group,
/// [`UsageError::LengthMismatch`] for buffers of the wrong size or a
/// missing one (`MPI_IN_PLACE` has no meaning here), `OpNotDefined`,
/// [`UsageError::WrongRequestKind`] for scan and exscan (undefined on an
/// intercommunicator), out of memory for temporaries.
pub fn build_inter(
    team: &InterTeam,
    seq: Tag,
    coll: Collective,
    input: Option<Buf>,
    output: Option<Buf>,
) -> Result<Schedule> {
    let (nl, nr) = (team.local.len() as u32, team.remote.len() as u32);
    if nl == 0 || nr == 0 || team.rank >= nl {
        return Err(UsageError::InvalidRank {
            rank: i32::try_from(team.rank).unwrap_or(i32::MAX),
            size: nl,
        }
        .into());
    }
    let s = Sides {
        nl,
        nr,
        r: team.rank,
    };
    let tag = Signature::of(&coll, nl, None, None)
        .kind_only()
        .tag_in(seq, TagSpace::Inter);
    let members: Arc<[Rank]> = team
        .local
        .iter()
        .chain(team.remote.iter())
        .copied()
        .collect();
    let mut b = Builder::new(
        kind_of(&coll),
        (team.context, nl + nr),
        tag,
        Some(members),
        input,
        output,
    );
    b.set_tag_space(TagSpace::Inter);
    match coll {
        Collective::Barrier => barrier(&mut b, s)?,
        Collective::Bcast { root } => bcast(&mut b, s, role(root, s)?)?,
        Collective::Gather { root, v } => gather(&mut b, s, role(root, s)?, v)?,
        Collective::Scatter { root, v } => scatter(&mut b, s, role(root, s)?, v)?,
        Collective::Reduce { root, op, dtype } => {
            let role = role(root, s)?;
            set_op(&mut b, op, dtype)?;
            reduce(&mut b, s, role, dtype)?;
        }
        Collective::Allreduce { op, dtype } => {
            set_op(&mut b, op, dtype)?;
            allreduce(&mut b, s, dtype)?;
        }
        Collective::ReduceScatter { counts, op, dtype } => {
            set_op(&mut b, op, dtype)?;
            reduce_scatter(&mut b, s, counts, dtype)?;
        }
        Collective::Allgather { v } => allgather(&mut b, s, v)?,
        Collective::Alltoall { v } => alltoall(&mut b, s, v)?,
        Collective::Scan { .. } | Collective::Exscan { .. } => {
            return Err(UsageError::WrongRequestKind(
                "scan and exscan are not defined on an intercommunicator",
            )
            .into())
        }
        Collective::Neighbor { .. } => {
            return Err(UsageError::WrongRequestKind(
                "neighborhood collectives need a topology, which an intercommunicator has not",
            )
            .into())
        }
    }
    b.finish()
}

fn set_op(b: &mut Builder, op: ReduceOp, dtype: Datatype) -> Result<()> {
    op.check(dtype)?;
    b.set_op(op, dtype);
    Ok(())
}

fn present(b: &Builder, slot: SlotId, what: &'static str) -> Result<usize> {
    if b.has(slot) {
        Ok(b.slot_len(slot))
    } else {
        Err(length_error(what))
    }
}

/// `len` split into `n` equal blocks, or `v` checked against it.
fn blocks(v: Option<Counts>, n: u32, len: usize, what: &'static str) -> Result<Counts> {
    match v {
        Some(v) => {
            v.check(n, len)?;
            Ok(v)
        }
        None if len % n as usize == 0 => Ok(Counts::packed(vec![len / n as usize; n as usize])),
        None => Err(length_error(what)),
    }
}

fn block(slot: SlotId, l: &Counts, j: u32) -> Region {
    Region::new(slot, l.displs[j as usize], l.counts[j as usize])
}

/// Every member receives a signal from every remote member, which sends
/// it only once it has entered.
fn barrier(b: &mut Builder, s: Sides) -> Result<()> {
    let (rx, tx) = (b.temp(0)?, b.temp(0)?);
    for i in 0..s.rounds() {
        let (from, to) = s.pair(i);
        if let Some(j) = from {
            b.recv(s.remote(j), Region::whole(rx, 0));
        }
        if let Some(j) = to {
            b.send(s.remote(j), Region::whole(tx, 0));
        }
        b.fence();
    }
    Ok(())
}

fn bcast(b: &mut Builder, s: Sides, role: Role) -> Result<()> {
    match role {
        Role::Idle => {}
        Role::Root => {
            let len = present(b, OUTPUT, "bcast needs its buffer")?;
            for j in 0..s.nr {
                b.send(s.remote(j), Region::whole(OUTPUT, len));
                b.fence();
            }
        }
        Role::Leaf(k) => {
            let len = present(b, OUTPUT, "bcast needs its buffer")?;
            b.recv(s.remote(k), Region::whole(OUTPUT, len));
        }
    }
    Ok(())
}

/// The root receives one block per remote rank, in rank order.
fn gather(b: &mut Builder, s: Sides, role: Role, v: Option<Counts>) -> Result<()> {
    match role {
        Role::Idle => {}
        Role::Root => {
            let len = present(b, OUTPUT, "gather's root needs its receive buffer")?;
            let l = blocks(
                v,
                s.nr,
                len,
                "gather: the root's buffer is not remote size × the block",
            )?;
            for j in 0..s.nr {
                b.recv(s.remote(j), block(OUTPUT, &l, j));
                b.fence();
            }
        }
        Role::Leaf(k) => {
            let src = source(b);
            let len = present(b, src, "gather needs the block to send")?;
            b.send(s.remote(k), Region::whole(src, len));
        }
    }
    Ok(())
}

/// The root sends block `j` to remote rank `j`.
fn scatter(b: &mut Builder, s: Sides, role: Role, v: Option<Counts>) -> Result<()> {
    match role {
        Role::Idle => {}
        Role::Root => {
            let len = present(b, INPUT, "scatter's root needs its send buffer")?;
            let l = blocks(
                v,
                s.nr,
                len,
                "scatter: the root's buffer is not remote size × the block",
            )?;
            for j in 0..s.nr {
                b.send(s.remote(j), block(INPUT, &l, j));
                b.fence();
            }
        }
        Role::Leaf(k) => {
            let len = present(b, OUTPUT, "scatter needs its receive buffer")?;
            b.recv(s.remote(k), Region::whole(OUTPUT, len));
        }
    }
    Ok(())
}

/// The root folds the remote contributions in remote rank order:
/// `c0 ⊕ c1 ⊕ ...`, one message at a time.
fn reduce(b: &mut Builder, s: Sides, role: Role, dtype: Datatype) -> Result<()> {
    match role {
        Role::Idle => {}
        Role::Root => {
            let len = present(b, OUTPUT, "reduce's root needs its receive buffer")?;
            whole(len, dtype)?;
            b.recv(s.remote(0), Region::whole(OUTPUT, len));
            b.fence();
            if s.nr == 1 {
                return Ok(());
            }
            let t = b.temp(len)?;
            for j in 1..s.nr {
                b.recv(s.remote(j), Region::whole(t, len));
                b.fence();
                b.reduce(Region::whole(t, len), Region::whole(OUTPUT, len), false);
            }
        }
        Role::Leaf(k) => {
            let src = source(b);
            let len = present(b, src, "reduce needs the data to send")?;
            whole(len, dtype)?;
            b.send(s.remote(k), Region::whole(src, len));
        }
    }
    Ok(())
}

/// This group's contributions reduced in rank order at local rank 0, then
/// swapped with the remote leader: at the leader, the remote group's
/// reduction lands in `theirs`. Returns nothing elsewhere.
fn reduce_and_swap(
    b: &mut Builder,
    s: Sides,
    src: SlotId,
    len: usize,
    theirs: Region,
) -> Result<()> {
    if s.r != 0 {
        b.send(0, Region::whole(src, len));
        b.fence();
        return Ok(());
    }
    // The leader's own data may sit in the output, which the swap
    // overwrites: fold into a temporary.
    let acc = b.temp(len)?;
    b.copy(Region::whole(src, len), Region::whole(acc, len));
    if s.nl > 1 {
        let t = b.temp(len)?;
        for j in 1..s.nl {
            b.recv(j, Region::whole(t, len));
            b.fence();
            b.reduce(Region::whole(t, len), Region::whole(acc, len), false);
        }
    }
    b.recv(s.remote(0), theirs);
    b.send(s.remote(0), Region::whole(acc, len));
    b.fence();
    Ok(())
}

/// Each group gets the reduction of the other group's data.
fn allreduce(b: &mut Builder, s: Sides, dtype: Datatype) -> Result<()> {
    let src = source(b);
    let len = present(b, src, "allreduce needs its data")?;
    whole(len, dtype)?;
    if present(b, OUTPUT, "allreduce needs its receive buffer")? != len {
        return Err(length_error(
            "allreduce: send and receive buffers differ in size",
        ));
    }
    reduce_and_swap(b, s, src, len, Region::whole(OUTPUT, len))?;
    // The leader hands the result to its group.
    if s.r == 0 {
        for j in 1..s.nl {
            b.send(j, Region::whole(OUTPUT, len));
            b.fence();
        }
    } else {
        b.recv(0, Region::whole(OUTPUT, len));
    }
    Ok(())
}

/// The remote group's vectors reduced, in blocks over this group: equal
/// ones (`counts: None`, the output's length each) or this group's counts.
fn reduce_scatter(
    b: &mut Builder,
    s: Sides,
    counts: Option<Vec<usize>>,
    dtype: Datatype,
) -> Result<()> {
    let len = present(b, INPUT, "reduce_scatter needs its send buffer")?;
    let out = present(b, OUTPUT, "reduce_scatter needs its receive buffer")?;
    whole(len, dtype)?;
    let l = match counts {
        Some(c) => Counts::packed(c),
        None => Counts::packed(vec![out; s.nl as usize]),
    };
    if l.counts.len() != s.nl as usize {
        return Err(length_error("reduce_scatter: one count per local rank"));
    }
    let total: usize = l.counts.iter().sum();
    if total != len || l.counts[s.r as usize] != out {
        return Err(length_error(
            "reduce_scatter: the send buffer is not the sum of the counts, or the receive buffer not this rank's count",
        ));
    }
    let theirs = if s.r == 0 { b.temp(len)? } else { OUTPUT };
    reduce_and_swap(b, s, INPUT, len, Region::whole(theirs, len))?;
    if s.r == 0 {
        b.copy(block(theirs, &l, 0), Region::whole(OUTPUT, out));
        for j in 1..s.nl {
            b.send(j, block(theirs, &l, j));
            b.fence();
        }
    } else {
        b.recv(0, Region::whole(OUTPUT, out));
    }
    Ok(())
}

/// Each member's block to every remote member, in pairwise rounds.
fn allgather(b: &mut Builder, s: Sides, v: Option<Counts>) -> Result<()> {
    let len = present(b, INPUT, "allgather needs its send buffer")?;
    let out = present(b, OUTPUT, "allgather needs its receive buffer")?;
    let l = blocks(
        v,
        s.nr,
        out,
        "allgather: the receive buffer is not remote size × the block",
    )?;
    for i in 0..s.rounds() {
        let (from, to) = s.pair(i);
        if let Some(j) = from {
            b.recv(s.remote(j), block(OUTPUT, &l, j));
        }
        if let Some(j) = to {
            b.send(s.remote(j), Region::whole(INPUT, len));
        }
        b.fence();
    }
    Ok(())
}

/// Block `j` to remote rank `j`, block `j` of the result from it, in
/// pairwise rounds.
fn alltoall(b: &mut Builder, s: Sides, v: Option<(Counts, Counts)>) -> Result<()> {
    let out = present(b, OUTPUT, "alltoall needs its receive buffer")?;
    // Without an input the blocks to send are in the output, which
    // receives overwrite: send from a copy.
    let src = if b.has(INPUT) {
        INPUT
    } else {
        let t = b.temp(out)?;
        b.copy(Region::whole(OUTPUT, out), Region::whole(t, out));
        t
    };
    let len = b.slot_len(src);
    let (send, recv) = match v {
        Some((sc, rc)) => {
            sc.check(s.nr, len)?;
            rc.check(s.nr, out)?;
            (sc, rc)
        }
        None => {
            let what = "alltoall: a buffer is not remote size × the block";
            (
                blocks(None, s.nr, len, what)?,
                blocks(None, s.nr, out, what)?,
            )
        }
    };
    for i in 0..s.rounds() {
        let (from, to) = s.pair(i);
        if let Some(j) = from {
            b.recv(s.remote(j), block(OUTPUT, &recv, j));
        }
        if let Some(j) = to {
            b.send(s.remote(j), block(src, &send, j));
        }
        b.fence();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coll::schedule::Step;

    fn team(rank: u32, nl: u32, nr: u32) -> InterTeam {
        InterTeam {
            context: 9,
            rank,
            local: (0..nl as Rank).collect(),
            remote: (nl as Rank..(nl + nr) as Rank).collect(),
        }
    }

    /// The (peer, is_send) of every message step, in order.
    fn talk(sched: &Schedule) -> Vec<(Rank, bool)> {
        sched
            .steps()
            .iter()
            .filter_map(|s| match s {
                Step::Send { peer, .. } => Some((*peer, true)),
                Step::Recv { peer, .. } => Some((*peer, false)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn pairwise_rounds_meet_every_remote_member_once() {
        for (nl, nr) in [(1, 1), (2, 3), (3, 2), (4, 1), (1, 4)] {
            for r in 0..nl {
                let s = build_inter(&team(r, nl, nr), 0, Collective::Barrier, None, None).unwrap();
                let t = talk(&s);
                for j in 0..nr as Rank {
                    let peer = nl as Rank + j;
                    assert_eq!(t.iter().filter(|&&p| p == (peer, true)).count(), 1);
                    assert_eq!(t.iter().filter(|&&p| p == (peer, false)).count(), 1);
                }
                // And the other side sends in the round this side receives.
                let sides = Sides { nl, nr, r };
                for i in 0..sides.rounds() {
                    if let (Some(from), _) = sides.pair(i) {
                        let them = Sides {
                            nl: nr,
                            nr: nl,
                            r: from,
                        };
                        assert_eq!(them.pair(i).1, Some(r));
                    }
                }
            }
        }
    }

    #[test]
    fn idle_members_do_nothing_and_tags_are_inter() {
        let coll = Collective::Bcast { root: INTER_IDLE };
        let s = build_inter(&team(1, 2, 3), 5, coll, None, Some(Buf::zeroed(8).unwrap())).unwrap();
        assert!(s.steps().is_empty());
        assert!(super::super::signature::INTER_TAGS.contains(&s.tag));
        let coll = Collective::Bcast { root: 3 };
        let e = build_inter(&team(1, 2, 3), 5, coll, None, Some(Buf::zeroed(8).unwrap()));
        assert!(e.is_err(), "a root outside the remote group is refused");
    }

    #[test]
    fn scan_is_refused() {
        let coll = Collective::Scan {
            op: ReduceOp::Sum,
            dtype: Datatype::I32,
        };
        let buf = || Some(Buf::zeroed(4).unwrap());
        assert!(build_inter(&team(0, 2, 2), 0, coll, buf(), buf()).is_err());
    }
}
