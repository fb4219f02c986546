//! Nonblocking node collectives without a schedule: the `ibarrier`,
//! `ibcast`, `ireduce` and `iallreduce` of a communicator that lives on one
//! node are one [`NodeOp`] each, so they skip building and running a
//! [`Schedule`](crate::coll::Schedule). The request is of the same kind as
//! any collective (it mixes with every completion call); its `Op::NodeColl`
//! names a [`NodeRun`], advanced by [`Engine::progress`] like a schedule.
//!
//! A node operation must be driven to its end even when its request was
//! freed while pending: every member numbers the region's operations alike,
//! so one left half done would stall the others' next ones.

use super::coll::CollStarted;
use super::request::{Kind, Op, Req, SendMode, Spec};
use super::{Engine, State};
use crate::buffer::Buf;
use crate::device::{Device, NodeCollectives, NodeOp};
use crate::envelope::{ANY_TAG, PROC_NULL};
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
