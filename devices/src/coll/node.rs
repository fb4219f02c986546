//! Node collectives on the `ferry` side: setting up a communicator's node
//! layout, and the blocking fast path.
//!
//! Set-up: on its first collective, every member learns which node each
//! member is on (an allgather of node names: the lowest job rank of each
//! node), and the members of each node attach a shared region (the leader
//! creates it, a barrier, the others open it, a barrier, the leader removes
//! its name). The decision to set up depends only on what every member
//! shares (the device kind and the communicator size), never on this node,
//! so either every member runs the set-up's collectives or none does.
//!
//! Routing: `ferry` does not decide which path a call takes. It asks
//! core's [`plan`] ([`Comm::route`]) with the layout and its buffer
//! lengths, and does what it says: a [`Route::Node`] of a blocking call is
//! polled here with the caller's slices (`node_fast`: no schedule, no
//! request, no allocation); everything else goes to core's builders,
//! whose node and hierarchical algorithms follow the same rule.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use ferry_core::coll::{plan, Collective, NodeTeam, Route};
use ferry_core::Device;

use crate::comm::Comm;
use crate::error::Result;
use crate::typed::{as_bytes, as_bytes_mut};
use crate::waiter::block_on;

impl Comm {
    /// The communicator's node layout, setting it up on first use
    /// (collective: every member calls this in its first collective).
    pub(crate) fn node_team(&self) -> Result<Option<Arc<NodeTeam>>> {
        if let Some(n) = self.inner.node.get() {
            return Ok(n.clone());
        }
        // Relaxed: only this thread reads it meanwhile (a collective on one
        // communicator runs on one thread at a time).
        self.inner
            .node_setup
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let team = self.set_up_node();
        self.inner
            .node_setup
            .store(false, std::sync::atomic::Ordering::Relaxed);
        let team = team?;
        // Two threads racing here would be two concurrent collectives on
        // one communicator, which MPI forbids: the first one wins.
        Ok(self.inner.node.get_or_init(|| team).clone())
    }

    fn set_up_node(&self) -> Result<Option<Arc<NodeTeam>>> {
        let n = self.size() as usize;
        let capable = {
            let mut g = self.shared().lock()?;
            g.engine()?.device_mut().node().is_some()
        };
        // The configuration is the same on every member (the launcher
        // passes one environment), so this choice is too.
        if !capable || !self.shared().config.coll_node || n < 2 || self.rank() < 0 {
            return Ok(None);
        }
        let shared = self.shared();
        let my_node = shared.node_ranks.first().copied().unwrap_or(shared.rank);
        let mut names = vec![0i32; n];
        self.coll_borrowed(
            Collective::Allgather { v: None },
            Some(as_bytes(&[my_node])),
            Some(as_bytes_mut(&mut names)),
        )?;
        let mut distinct: Vec<i32> = names.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let node_of: Vec<u32> = names
            .iter()
            .map(|x| distinct.binary_search(x).unwrap_or(0) as u32)
            .collect();
        let mut nodes = vec![Vec::new(); distinct.len()];
        for (r, &k) in node_of.iter().enumerate() {
            nodes[k as usize].push(r as u32);
        }
        let mine = &nodes[node_of[self.rank() as usize] as usize];
        let members: Vec<ferry_core::Rank> = mine
            .iter()
            .map(|&r| self.job_rank(r as ferry_core::Rank))
            .collect::<Result<_>>()?;
        let attach = mine.len() >= 2;
        let leader = mine.first() == Some(&(self.rank() as u32));
        let region = self.inner.region();
        let step = |open: bool| -> Result<()> {
            if attach && leader != open {
                let mut g = self.shared().lock()?;
                let dev = g.engine()?.device_mut().node();
                if let Some(dev) = dev {
                    dev.attach(region, &members, leader)?;
                }
            }
            self.coll_borrowed(Collective::Barrier, None, None)
        };
        step(false)?;
        step(true)?;
        if attach && leader {
            let mut g = self.shared().lock()?;
            if let Some(dev) = g.engine()?.device_mut().node() {
                dev.attached(region);
            }
        }
        Ok(Some(Arc::new(NodeTeam {
            region,
            node_of,
            nodes,
        })))
    }
}

/// Polls of a node collective's flags per progress round while blocked.
const FLAG_LOOKS: u32 = 16;

impl Comm {
    /// Where `coll` goes, given this rank's input and output lengths: the
    /// one routing decision, core's [`plan`] (a node operation on a
    /// communicator that lives on one node, or a schedule).
    #[inline]
    pub(crate) fn route(
        &self,
        coll: &Collective,
        input: Option<usize>,
        output: Option<usize>,
    ) -> Result<Route> {
        // Borrowed, not cloned: two atomic reference-count updates less on
        // every call.
        let node = self.inner.node.get().and_then(Option::as_deref);
        let size = self.size();
        let rank = u32::try_from(self.rank()).unwrap_or(size);
        Ok(plan(node, rank, size, coll, input, output)?)
    }

    /// The blocking barrier, bcast, reduce and allreduce of a communicator
    /// that lives on one node: straight through the node region, without
    /// a schedule or a request (nothing to allocate, nothing lent to the
    /// engine: the device reads and writes the caller's slices only inside
    /// each poll). `Ok(false)` if this collective cannot go this way.
    pub(crate) fn node_fast(
        &self,
        coll: &Collective,
        input: Option<&[u8]>,
        output: &mut Option<&mut [u8]>,
    ) -> Result<bool> {
        if self.is_inter() {
            // Its groups' members need not share a node region: a schedule.
            return Ok(false);
        }
        // A blocking collective may synchronize: the first one sets the
        // node layout up.
        if self.inner.node.get().is_none() && !self.inner.node_setup.load(Ordering::Relaxed) {
            self.node_team()?;
        }
        let output_len = output.as_deref().map(<[u8]>::len);
        let Route::Node(mut node_op) = self.route(coll, input.map(<[u8]>::len), output_len)? else {
            return Ok(false);
        };
        // Every call takes a sequence number, whichever way it goes, so
        // that members agree on the next one.
        self.inner.next_tag();
        let out: &mut [u8] = output.as_deref_mut().unwrap_or(&mut []);
        let mut reserved = false;
        block_on(self.shared(), |e| {
            let node = e.device_mut().node().ok_or(ferry_core::Error::Internal(
                "node team without node collectives",
            ))?;
            // Its sequence number is taken under the first hold of the
            // lock that also polls: one lock round trip less per call.
            if !reserved {
                node.reserve(&mut node_op)?;
                reserved = true;
            }
            // A few cheap looks at the flags before each full progress
            // round: the other members usually arrive within one cache-line
            // transfer, and a progress round costs several.
            for _ in 0..FLAG_LOOKS {
                if node.poll(&mut node_op, input, out)? {
                    return Ok(Some(()));
                }
                std::hint::spin_loop();
            }
            Ok(None)
        })?;
        Ok(true)
    }
}
