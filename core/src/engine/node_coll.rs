//! Starting a collective from its description, and the nonblocking node
//! collectives without a schedule.
//!
//! [`Engine::start_collective`] (and [`Engine::collective_init`] for a
//! persistent one) is the one call the `ferry` crate makes: it asks core's
//! routing ([`plan`](crate::coll::plan)) once and does what it says. A [`Route::Schedule`] is
//! built and run as a [`Schedule`](crate::coll::Schedule). A
//! [`Route::Node`] of a nonblocking call is one [`NodeOp`] carried by a
//! [`NodeRun`]: the request is of the same kind as any collective (it mixes
//! with every completion call), its `Op::NodeColl` names the run, advanced
//! by [`Engine::progress`] like a schedule. A persistent one is a one-step
//! schedule (built once, so its cost does not matter).
//!
//! Why two carriers: as a one-step schedule, a nonblocking node collective
//! costs 3 allocations more per call (the schedule's steps, slots and node
//! operations, plus a box per buffer: `ferry-bench iallreduce` went from 1
//! to 5 allocations per operation and `ibarrier` from 0 to 3, with a pure
//! time about 0.3 µs longer on 2 ranks), where a `NodeRun` allocates
//! nothing in steady state.
//!
//! A node operation must be driven to its end even when its request was
//! freed while pending: every member numbers the region's operations alike,
//! so one left half done would stall the others' next ones.

use super::coll::CollStarted;
use super::request::{Kind, Op, Req, SendMode, Spec};
use super::{Engine, State};
use crate::buffer::Buf;
use crate::coll::{build_routed, CollTable, Collective, Route, Team};
use crate::device::{Device, NodeCollectives, NodeOp};
use crate::envelope::{Tag, ANY_TAG, PROC_NULL};
use crate::error::{Error, Result};
use crate::handle::Request;
use crate::status::Status;

/// Polls of the region's flags per progress round (and in the start call).
const NODE_LOOKS: u32 = 4;

/// A node operation in flight and the buffers it reads and writes.
#[derive(Debug)]
pub(crate) struct NodeRun {
    op: NodeOp,
    input: Option<Buf>,
    output: Option<Buf>,
    /// The request's key.
    request: u64,
}

impl NodeRun {
    /// A few polls; `Ok(true)` when the operation is done.
    fn poll(&mut self, node: &mut dyn NodeCollectives) -> Result<bool> {
        let input = self.input.as_ref().map(Buf::as_slice);
        let output: &mut [u8] = match self.output.as_mut() {
            Some(b) => b.as_mut_slice(),
            None => &mut [],
        };
        for _ in 0..NODE_LOOKS {
            if node.poll(&mut self.op, input, output)? {
                return Ok(true);
            }
            std::hint::spin_loop();
        }
        Ok(false)
    }
}

impl<D: Device> Engine<D> {
    /// Starts one collective call from its description (the nonblocking
    /// form; see the module docs): routes it, then starts its node
    /// operation or builds and starts its schedule. `tag` is the call's
    /// sequence number on the communicator.
    ///
    /// # Errors
    /// What [`build`](crate::coll::build) returns for bad arguments; as for
    /// [`Engine::start_coll`] and [`Engine::start_node_coll`].
    pub fn start_collective(
        &mut self,
        team: &Team,
        table: &CollTable,
        tag: Tag,
        coll: Collective,
        input: Option<Buf>,
        output: Option<Buf>,
    ) -> Result<CollStarted> {
        match team.plan(&coll, input.as_ref(), output.as_ref())? {
            Route::Node(op) => self.start_node_coll(op, input, output),
            Route::Schedule => {
                let sched = build_routed(team, tag, table, coll, input, output)?;
                self.start_coll(sched)
            }
        }
    }

    /// As [`Engine::start_collective`] for a persistent collective: its
    /// inactive request ([`Engine::coll_init`]).
    ///
    /// # Errors
    /// What [`build`](crate::coll::build) returns for bad arguments.
    pub fn collective_init(
        &mut self,
        team: &Team,
        table: &CollTable,
        tag: Tag,
        coll: Collective,
        input: Option<Buf>,
        output: Option<Buf>,
    ) -> Result<Request> {
        let sched = crate::coll::build(team, tag, table, coll, input, output)?;
        Ok(self.coll_init(sched))
    }

    /// Starts a node collective (see the module docs): `op` on this
    /// device's node region, reading `input` (or `output`, in place) and
    /// writing `output`. The [`Completion`](super::Completion) hands the
    /// buffers back as for [`Engine::start_coll`]; a collective that
    /// finished inside this call returns [`Request::EMPTY`] with them.
    ///
    /// # Errors
    /// `Internal` on a device without node collectives; what reserving the
    /// operation's sequence number returns (an unknown region). A member
    /// that died or disagrees fails the request, not this call.
    pub fn start_node_coll(
        &mut self,
        mut op: NodeOp,
        input: Option<Buf>,
        output: Option<Buf>,
    ) -> Result<CollStarted> {
        let node = self.device.node().ok_or(NO_NODE)?;
        op.reset();
        node.reserve(&mut op)?;
        let mut run = NodeRun {
            op,
            input,
            output,
            request: 0,
        };
        let polled = run.poll(node);
        if let Ok(true) = polled {
            return Ok(CollStarted {
                request: Request::EMPTY,
                output: run.output,
                input: run.input,
            });
        }
        let spec = Spec {
            peer: PROC_NULL,
            tag: ANY_TAG,
            context: 0,
            mode: SendMode::Standard,
        };
        let key = self.st.requests.insert(Req::new(Kind::Coll, spec, None));
        run.request = key;
        let run_key = self.st.node_runs.insert(run);
        if let Some(req) = self.st.requests.get_mut(key) {
            req.op = Op::NodeColl(run_key);
        }
        match polled {
            Err(e) => self.st.finish_node_coll(run_key, Some(e)),
            _ => self.st.node_active.push(run_key),
        }
        Ok(CollStarted {
            request: Request(key),
            output: None,
            input: None,
        })
    }

    /// Advances every pending node collective; called from progress.
    pub(super) fn advance_node_colls(&mut self) -> Result<()> {
        let node = self.device.node().ok_or(NO_NODE)?;
        let mut i = 0;
        while i < self.st.node_active.len() {
            let key = self.st.node_active[i];
            let polled = match self.st.node_runs.get_mut(key) {
                Some(run) => run.poll(node),
                None => Ok(true),
            };
            match polled {
                Ok(false) => i += 1,
                done => {
                    self.st.node_active.swap_remove(i);
                    self.st.finish_node_coll(key, done.err());
                }
            }
        }
        Ok(())
    }
}

impl State {
    /// Completes the request of a finished node collective (dropping both
    /// if the request was freed while pending).
    fn finish_node_coll(&mut self, run_key: u64, error: Option<Error>) {
        self.events += 1;
        let Some(request) = self.node_runs.get(run_key).map(|r| r.request) else {
            return;
        };
        let Some(req) = self.requests.get_mut(request) else {
            self.node_runs.remove(run_key);
            return;
        };
        req.status = Status {
            error,
            ..Status::EMPTY
        };
        match req.life.finish() {
            Some(life) => req.life = life,
            None => {
                self.requests.remove(request);
                self.node_runs.remove(run_key);
            }
        }
    }

    /// The buffers of a finished node collective, for `take`: `(output,
    /// input)`.
    pub(super) fn take_node_coll(&mut self, run_key: u64) -> (Option<Buf>, Option<Buf>) {
        match self.node_runs.remove(run_key) {
            Some(run) => (run.output, run.input),
            None => (None, None),
        }
    }
}

const NO_NODE: Error = Error::Internal("a node collective on a device without node collectives");
