//! Node collectives over shared memory (DESIGN §9): barrier, bcast, reduce
//! and allreduce among a communicator's ranks on this node, through one
//! region per communicator of flags and buffers, not messages (after
//! MPICH's POSIX release/gather and Open MPI's xhc). The engine reaches
//! them through [`NodeCollectives`]; `ffi.rs` holds the raw region.
//!
//! # The protocol
//! Each member `i` has two counters, `arrive[i]` and `done[i]`, a `meta`
//! word (a hash of the chunk's sequence number, the operation, its root and
//! length, checked by every reader, so members that disagree fail with a
//! typed error instead of reading garbage or a stale slot), and two slots
//! (parities). Operations take consecutive sequence numbers `s`
//! (one per chunk of at most a slot) in the order every member issues them;
//! chunk `s` uses the slots of parity `s % 2`.
//! - **Publish.** A member that contributes data waits until every
//!   `done[j] ≥ s − 2` (the last readers of its parity-`p` slot and `meta`
//!   word are done with them), copies its chunk in and writes its length in
//!   `meta[i][p]`; then every member sets `arrive[i] = s`.
//! - **Consume.** A member that needs others' data waits for their
//!   `arrive ≥ s`, reads their slots (reducing in member order, so a
//!   non-commutative op sees its operands in rank order), then sets
//!   `done[i] = s`. Members that read nothing in a chunk set `done` when
//!   they publish.
//!
//! A barrier is a chunk without data: publish `arrive`, wait for all.
//! Two parities let a member publish chunk `s + 1` while the others still
//! read chunk `s`.
//!
//! Counters are written with an AcqRel swap (Release: publishes the slot
//! bytes, pairs with the readers' Acquire loads; RMW: the producer half of
//! the sleep protocol's Dekker pair, as a fastbox publish is), after which
//! the writer wakes every member that sleeps ([`Segment::take_sleeper`]).
//! A poll that must wait records what for; the device's `arm` re-reads
//! those counters with an AcqRel RMW after raising its sleep flag (the
//! consumer half), so a change that lands between the poll and the sleep
//! either is seen there or finds the flag raised and signals.
//!
//! [`Segment::take_sleeper`]: crate::ffi::Segment::take_sleeper

#[allow(unsafe_code)]
mod ffi;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::AcqRel, Ordering::Acquire};

use ferry_core::coll::fold_in_order;
use ferry_core::device::{NodeCollectives, NodeKind, NodeOp};
use ferry_core::{Error, PeerError, Rank, UsageError};

use self::ffi::Region;
use crate::device::ShmDevice;

/// What a member that publishes chunk `s` of `op` writes in its `meta`
/// word, and what its readers expect: equal only if they agree on the
/// operation, its root and length, and the chunk is this one (not a slot
/// left from an earlier call).
fn meta_word(op: &NodeOp, s: u64) -> u64 {
    let kind = match op.kind {
        NodeKind::Barrier => 1u64,
        NodeKind::Bcast => 2,
        NodeKind::Reduce => 3,
        NodeKind::Allreduce => 4,
    };
    let root = match op.kind {
        NodeKind::Bcast | NodeKind::Reduce => u64::from(op.root),
        NodeKind::Barrier | NodeKind::Allreduce => 0,
    };
    let mut h = (s ^ kind << 56).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h = (h ^ root).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    (h ^ op.len as u64).wrapping_mul(0x94D0_49BB_1331_11EB)
}

/// Where a member stands in its current chunk (`NodeOp::phase`): yet to
/// publish; published, reading and finishing to do; published and already
/// done (a member that reads no slot), at most the others' arrival to wait
/// for.
const PHASE_PUBLISH: u8 = 0;
const PHASE_READ: u8 = 1;
const PHASE_DONE: u8 = 2;

/// Bytes per slot: chunks of this size move through the region.
const SLOT: usize = 64 << 10;

/// A region this rank is attached to.
#[derive(Debug)]
struct Attached {
    region: Region,
    /// My index among the members.
    me: usize,
    /// Each member's local index in the device (for wake-ups and liveness).
    local: Vec<u32>,
    /// Each member's job rank.
    ranks: Vec<Rank>,
    /// The last sequence number reserved.
    next: u64,
    /// The file, until every member has mapped it (leader only).
    path: Option<PathBuf>,
}

impl Drop for Attached {
    fn drop(&mut self) {
        // A leader whose members never all attached still owns the name.
        if let Some(path) = self.path.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Which counter a wait is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Counter {
    Arrive,
    Done,
}

/// What a member waits for: counter `which` of `who` (every member, or
/// one) to reach `at_least`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Wait {
    region: u64,
    which: Counter,
    who: Option<usize>,
    at_least: u64,
}

/// The device's node regions and pending waits.
#[derive(Debug)]
pub(crate) struct Nodes {
    regions: rustc_hash::FxHashMap<u64, Attached>,
    waits: Vec<Wait>,
    /// Where region files go, and the segment name they extend.
    pub(crate) dir: PathBuf,
    /// The node's region key, drawn by the segment's creator and shared
    /// through the bootstrap: region names are keyed hashes, so nobody
    /// outside the job can predict (and plant) one. `Debug` hides it.
    key: ferry_core::auth::JobSecret,
}

fn counter(r: &Region, which: Counter, i: usize) -> &AtomicU64 {
    match which {
        Counter::Arrive => r.arrive(i),
        Counter::Done => r.done(i),
    }
}

impl Nodes {
    /// No regions yet; their files go in `dir`, named with `key`.
    pub(crate) fn new(dir: PathBuf, key: ferry_core::auth::JobSecret) -> Nodes {
        Nodes {
            regions: rustc_hash::FxHashMap::default(),
            // Room for the waits of a few operations outstanding at once,
            // so recording one never allocates on a collective's path.
            waits: Vec::with_capacity(16),
            dir,
            key,
        }
    }

    /// True if no recorded wait is satisfied: the sleep check of `arm`.
    /// Each counter is read with an AcqRel RMW (see the module docs).
    pub(crate) fn quiet(&self) -> bool {
        self.waits.iter().all(|w| {
            let Some(a) = self.regions.get(&w.region) else {
                return true;
            };
            let reached =
                |i: usize| counter(&a.region, w.which, i).fetch_add(0, AcqRel) >= w.at_least;
            let ready = match w.who {
                Some(i) => reached(i),
                None => (0..a.local.len()).all(reached),
            };
            !ready
        })
    }
}

fn chunk_bytes(op: &NodeOp) -> usize {
    let elem = op.op.as_ref().map_or(1, |(_, d)| d.size().max(1));
    (SLOT / elem).max(1) * elem
}

fn chunks(op: &NodeOp) -> u64 {
    match op.kind {
        NodeKind::Barrier => 1,
        _ => (op.len.div_ceil(chunk_bytes(op)).max(1)) as u64,
    }
}

fn missing(id: u64) -> Error {
    tracing::error!(
        region = id,
        "node collective on a region this rank has not attached"
    );
    Error::Internal("node collective on an unattached region")
}

impl ShmDevice {
    /// The region's file: the context id alone is not unique on a node
    /// (a split gives disjoint communicators one context), the leader's
    /// job rank with it is.
    /// `<segment name>-c<keyed hash of the id and the leader>`: the
    /// segment's prefix (so `ferryrun`'s sweep finds it), and 128 bits
    /// nobody without the node's key can compute (the segment's name is
    /// visible in the directory while the job sets up; this is not).
    fn region_path(&self, id: u64, leader: Rank) -> PathBuf {
        let tag = self.node.key.mac(
            "ferry shm node region v1",
            &[&id.to_le_bytes(), &leader.to_le_bytes()],
        );
        self.node
            .dir
            .join(ferry_core::shared_files::node_region_name(
                &self.name,
                &tag[..16],
            ))
    }

    /// Wakes every other member that sleeps (no allocation: this runs on
    /// every flag a node collective publishes).
    fn wake_members(&mut self, id: u64) {
        let mut at = 0;
        loop {
            let next = {
                let Some(a) = self.node.regions.get(&id) else {
                    return;
                };
                let (me, local) = (a.me, &a.local);
                let seg = &self.seg;
                (at..local.len())
                    .find(|&i| i != me && seg.take_sleeper(local[i]))
                    .map(|i| (i, local[i]))
            };
            match next {
                Some((i, l)) => {
                    self.signal(l);
                    at = i + 1;
                }
                None => return,
            }
        }
    }

    /// Records a wait, or fails if a member it needs died.
    fn must_wait(&mut self, w: Wait) -> Result<bool, Error> {
        let a = self
            .node
            .regions
            .get(&w.region)
            .ok_or_else(|| missing(w.region))?;
        // No allocation: this runs on every poll that must wait.
        let (from, to) = match w.who {
            Some(i) => (i, i + 1),
            None => (0, a.local.len()),
        };
        for i in from..to.min(a.local.len()) {
            if !self.failures.is_alive(a.local[i] as usize) {
                return Err(PeerError::Died { rank: a.ranks[i] }.into());
            }
        }
        if !self.node.waits.contains(&w) {
            self.node.waits.push(w);
        }
        Ok(false)
    }

    /// The wait `w` (if recorded) is over.
    fn passed(&mut self, w: Wait) {
        self.node.waits.retain(|x| *x != w);
    }
}

impl NodeCollectives for ShmDevice {
    fn local_ranks(&self) -> &[Rank] {
        &self.ranks
    }

    fn attach(&mut self, id: u64, members: &[Rank], leader: bool) -> Result<(), Error> {
        let os = |what: &'static str| {
            move |e: std::io::Error| {
                tracing::error!(error = %e, what, "node collective region");
                Error::Device(ferry_core::DeviceError::Os {
                    what,
                    code: e.raw_os_error().unwrap_or(0),
                })
            }
        };
        let local = members
            .iter()
            .map(|&r| {
                self.local_of
                    .get(r as usize)
                    .copied()
                    .filter(|&l| l != crate::device::NOT_LOCAL)
                    .ok_or(Error::Usage(UsageError::InvalidRank {
                        rank: r,
                        size: self.local_of.len() as u32,
                    }))
            })
            .collect::<Result<Vec<u32>, Error>>()?;
        let me = members
            .iter()
            .position(|&r| r == self.rank)
            .ok_or(Error::Internal("node region without this rank"))?;
        let first = *members
            .first()
            .ok_or(Error::Internal("node region without members"))?;
        let path = self.region_path(id, first);
        let region = if leader {
            let file =
                crate::os::create_segment_file(&path).map_err(os("creating a node region"))?;
            Region::create(&file, members.len(), SLOT).map_err(os("mapping a node region"))?
        } else {
            let file = crate::os::open_segment_file(&path).map_err(os("opening a node region"))?;
            crate::os::check_own_file(&file, &path).map_err(os("checking a node region"))?;
            Region::open(&file, members.len(), SLOT).map_err(os("mapping a node region"))?
        };
        self.node.regions.insert(
            id,
            Attached {
                region,
                me,
                local,
                ranks: members.to_vec(),
                next: 0,
                path: leader.then_some(path),
            },
        );
        Ok(())
    }

    fn attached(&mut self, id: u64) {
        if let Some(path) = self.node.regions.get_mut(&id).and_then(|a| a.path.take()) {
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!(error = %e, path = %path.display(), "could not remove a node region's name");
            }
        }
    }

    fn detach(&mut self, id: u64) {
        self.attached(id);
        self.node.regions.remove(&id);
        self.node.waits.retain(|w| w.region != id);
    }

    fn has(&self, id: u64) -> bool {
        self.node.regions.contains_key(&id)
    }

    fn reserve(&mut self, op: &mut NodeOp) -> Result<(), Error> {
        let a = self
            .node
            .regions
            .get_mut(&op.region)
            .ok_or_else(|| missing(op.region))?;
        op.seq = a.next + 1;
        op.chunk = 0;
        op.phase = 0;
        a.next += chunks(op);
        Ok(())
    }

    fn poll(
        &mut self,
        op: &mut NodeOp,
        input: Option<&[u8]>,
        output: &mut [u8],
    ) -> Result<bool, Error> {
        let id = op.region;
        let total = chunks(op);
        let cb = chunk_bytes(op);
        while op.chunk < total {
            let s = op.seq + op.chunk;
            let parity = (s % 2) as usize;
            let start = (op.chunk as usize * cb).min(op.len);
            let end = (start + cb).min(op.len);
            let a = self.node.regions.get(&id).ok_or_else(|| missing(id))?;
            let (me, m) = (a.me, a.local.len());
            let root = op.root as usize;
            let r = &a.region;
            if op.phase == PHASE_PUBLISH {
                // Publish in sequence order: a later operation's `arrive`
                // must not claim an earlier one's data (several may be
                // outstanding on one region).
                let mine = Wait {
                    region: id,
                    which: Counter::Arrive,
                    who: Some(me),
                    at_least: s - 1,
                };
                if r.arrive(me).load(Acquire) != s - 1 {
                    return self.must_wait(mine);
                }
                let reuse = Wait {
                    region: id,
                    which: Counter::Done,
                    who: None,
                    at_least: s.saturating_sub(2),
                };
                let writes = match op.kind {
                    NodeKind::Barrier => false,
                    NodeKind::Bcast => me == root,
                    NodeKind::Reduce | NodeKind::Allreduce => true,
                };
                // A member that writes its slot (and its length word, read
                // by exactly the members that read the slot) waits for the
                // parity's last readers. One that writes neither, a barrier
                // or a broadcast's receiver, publishes at once.
                if writes {
                    if !(0..m).all(|i| r.done(i).load(Acquire) >= reuse.at_least) {
                        return self.must_wait(reuse);
                    }
                    let src = input.unwrap_or(&*output);
                    let chunk =
                        src.get(start..end)
                            .ok_or(Error::Usage(UsageError::LengthMismatch(
                                "node collective: buffer shorter than the operation",
                            )))?;
                    r.write_slot(me, parity, chunk);
                    // Relaxed: published by the AcqRel swap of `arrive` below.
                    r.meta(me, parity)
                        .store(meta_word(op, s), std::sync::atomic::Ordering::Relaxed);
                }
                // A member that reads no slot in this chunk (a barrier's,
                // a broadcast's root, a reduce's other members) and whose
                // earlier chunks are finished is done with it as it
                // arrives: one write of its counters' line instead of two,
                // the second after the others have pulled the line away.
                let reads_no_slot = match op.kind {
                    NodeKind::Barrier => true,
                    NodeKind::Bcast => me == root,
                    NodeKind::Reduce => me != root,
                    NodeKind::Allreduce => false,
                };
                let done_early = reads_no_slot && r.done(me).load(Acquire) == s - 1;
                if done_early {
                    // Relaxed: published by the AcqRel swap of `arrive`.
                    r.done(me).store(s, std::sync::atomic::Ordering::Relaxed);
                }
                // AcqRel: see the module docs.
                r.arrive(me).swap(s, AcqRel);
                op.phase = if done_early { PHASE_DONE } else { PHASE_READ };
                self.passed(mine);
                self.passed(reuse);
                self.wake_members(id);
                continue;
            }
            let reads = match op.kind {
                NodeKind::Barrier | NodeKind::Allreduce => Some(None),
                NodeKind::Bcast if me != root => Some(Some(root)),
                NodeKind::Reduce if me == root => Some(None),
                _ => None,
            };
            if let Some(who) = reads {
                let ready = match who {
                    Some(i) => r.arrive(i).load(Acquire) >= s,
                    None => (0..m).all(|i| r.arrive(i).load(Acquire) >= s),
                };
                let wait = Wait {
                    region: id,
                    which: Counter::Arrive,
                    who,
                    at_least: s,
                };
                if !ready {
                    return self.must_wait(wait);
                }
                // Every member whose data this one reads must agree on the
                // length (ordered by the Acquire loads of `arrive` above).
                // A barrier reads no data, and its members write no length.
                let (from, to) = match (op.kind, who) {
                    (NodeKind::Barrier, _) => (0, 0),
                    (_, Some(i)) => (i, i + 1),
                    (_, None) => (0, m),
                };
                let expect = meta_word(op, s);
                if let Some(i) = (from..to).find(|&i| r.meta(i, parity).load(Acquire) != expect) {
                    tracing::warn!(
                        kind = ?op.kind,
                        len = op.len,
                        root = op.root,
                        member = i,
                        seq = s,
                        "node collective calls differ between members"
                    );
                    return Err(UsageError::CollectiveMismatch {
                        found_by: self.rank,
                    }
                    .into());
                }
            }
            // Finish in sequence order too, for the same reason.
            let mine = Wait {
                region: id,
                which: Counter::Done,
                who: Some(me),
                at_least: s - 1,
            };
            // A member that was done as it arrived has at most the others'
            // arrival to wait for (a barrier's), seen above.
            let done_already = op.phase == PHASE_DONE;
            if !done_already {
                if r.done(me).load(Acquire) != s - 1 {
                    return self.must_wait(mine);
                }
                if reads.is_some() {
                    let len = end - start;
                    let out = output.get_mut(start..end).ok_or(Error::Usage(
                        UsageError::LengthMismatch(
                            "node collective: output shorter than the operation",
                        ),
                    ))?;
                    match (op.kind, &op.op) {
                        (NodeKind::Barrier, _) => {}
                        (NodeKind::Bcast, _) => out.copy_from_slice(r.slot(root, parity, len)),
                        (_, Some((rop, dtype))) => {
                            fold_in_order(rop, *dtype, m, |i| r.slot(i, parity, len), out)?;
                        }
                        (_, None) => return Err(Error::Internal("node reduction without an op")),
                    }
                }
                r.done(me).swap(s, AcqRel);
            }
            if let Some(who) = reads {
                self.passed(Wait {
                    region: id,
                    which: Counter::Arrive,
                    who,
                    at_least: s,
                });
            }
            if !done_already {
                self.passed(mine);
                self.wake_members(id);
            }
            op.phase = PHASE_PUBLISH;
            op.chunk += 1;
        }
        Ok(true)
    }
}
