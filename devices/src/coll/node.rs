//! Node collectives on the `ferry` side: setting up a communicator's node
//! layout, and the blocking fast path.
//!
//! Set-up: the first collective of any form (blocking, nonblocking,
//! persistent) sets the layout up without waiting for anybody: every
//! member works out which node each member is on from what the launch told
//! every rank (`Shared::node_names`: each job rank's node, named by its
//! lowest job rank), and the members of each node attach a shared region:
//! the leader creates it, the others open it when an operation on it first
//! polls (the device's contract, `ferry_core::device::NodeCollectives`).
//! So a nonblocking first collective takes the node path too. The decision
//! to set up depends only on what every member shares (the device kind,
//! the configuration and the communicator size), never on this node, so
//! every member makes the same one.
//!
//! Routing: `ferry` does not decide which path a call takes. It asks
//! core's [`plan`] ([`Comm::route`]) with the layout and its buffer
//! lengths, and does what it says: a [`Route::Node`] of a blocking call is
//! polled here with the caller's slices (`node_fast`: no schedule, no
//! request, no allocation); everything else goes to core's builders,
//! whose node and hierarchical algorithms follow the same rule.

use std::sync::Arc;

use ferry_core::coll::{plan, Collective, NodeTeam, Route};
use ferry_core::Device;

use crate::comm::Comm;
use crate::error::Result;
use crate::waiter::block_on;

impl Comm {
    /// Sets the communicator's node layout up on its first collective
    /// (every member calls this in its first collective, whatever its
    /// form). It never waits for the other members, so a nonblocking
    /// collective may do it.
    #[inline]
    pub(crate) fn set_up_node_once(&self) -> Result<()> {
        if self.inner.node.get().is_none() {
            self.node_team()?;
        }
        Ok(())
    }

    /// The communicator's node layout, setting it up on first use.
    fn node_team(&self) -> Result<Option<Arc<NodeTeam>>> {
        if let Some(n) = self.inner.node.get() {
            return Ok(n.clone());
        }
        let team = self.set_up_node()?;
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
        // Every member knows every job rank's node from the launch (the
        // same data everywhere): no need to ask the others.
        let names_of = &self.shared().node_names;
        let names: Vec<i32> = (0..n as ferry_core::Rank)
            .map(|r| {
                let j = self.job_rank(r)?;
                Ok(names_of.get(j as usize).copied().unwrap_or(j))
            })
            .collect::<Result<_>>()?;
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
        let leader = mine.first() == Some(&(self.rank() as u32));
        let region = self.inner.region();
        if mine.len() >= 2 {
            // The leader creates the region; the others open it now or,
            // if it is not there yet, in a later poll of an operation on
            // it: nobody waits here.
            let mut g = self.shared().lock()?;
            if let Some(dev) = g.engine()?.device_mut().node() {
                dev.attach(region, &members, leader)?;
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
        self.set_up_node_once()?;
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
