//! Persistent point-to-point requests: `MPI_Send_init`, `MPI_Ssend_init`,
//! `MPI_Rsend_init`, `MPI_Bsend_init`, `MPI_Recv_init`, `MPI_Start`,
//! `MPI_Startall`.
//!
//! A persistent request keeps its arguments ([`Persist`]) and each start
//! issues the nonblocking operation they describe, exactly as the
//! standard defines a start: the buffer's current contents are sent (a
//! non-contiguous one packed at that moment), a receive unpacks on
//! completion. Completing an activation leaves the request inactive under
//! the same handle (`request/object.rs`). Persistent collectives (`coll/api.rs`)
//! keep their own kind here.

use std::ffi::c_int;

use ferry::{Comm, SendMode};

use crate::datatype::buf::{recv_data, send_data};

use crate::abi::class::*;
use crate::abi::MPI_REQUEST_NULL;
use crate::datatype::{count_arg, TypeRef};
use crate::error::{Fail, Res};
use crate::ffi::args::{Out, RecvBuf, SendBuf};
use crate::p2p::messages::start_recv;
use crate::request::handle::{give_back, lend};
use crate::request::object::{ReqObj, Restart, State};
use crate::request::post::Post;
use crate::state::rt;

/// How to start a persistent request again.
#[derive(Debug)]
pub(crate) struct Persist {
    /// The communicator (kept alive even if the program frees its handle).
    comm: Comm,
    kind: Kind,
}

/// What a start issues.
#[derive(Debug)]
pub(crate) enum Kind {
    /// A send in `mode`, or buffered.
    Send {
        buf: SendBuf,
        count: usize,
        ty: TypeRef,
        dest: c_int,
        tag: c_int,
        mode: Option<SendMode>,
    },
    /// A receive.
    Recv {
        buf: RecvBuf,
        count: usize,
        ty: TypeRef,
        source: c_int,
        tag: c_int,
    },
    /// A persistent collective.
    Coll(Box<crate::coll::Deferred>),
}

impl Restart for Persist {
    fn start(&self) -> Res<(State, Post)> {
        self.issue()
    }
}

impl Persist {
    /// A persistent request of `kind` on `comm`.
    pub(crate) fn new(comm: Comm, kind: Kind) -> Persist {
        Persist { comm, kind }
    }

    /// Issues one activation: the new state and post step. The buffers
    /// are the program's, valid from a start until the activation
    /// completes (MPI's rule for persistent requests: the tokens'
    /// promise).
    fn issue(&self) -> Res<(State, Post)> {
        let c = &self.comm;
        match &self.kind {
            Kind::Send {
                buf,
                count,
                ty,
                dest,
                tag,
                mode: Some(mode),
            } => {
                let req = send_data(*buf, *count, ty)?.start(c, *dest, *tag, *mode)?;
                Ok((State::Active(req), Post::None))
            }
            Kind::Send {
                buf,
                count,
                ty,
                dest,
                tag,
                mode: None,
            } => {
                let status = crate::p2p::bsend::bsend_wide(c, *buf, *count, ty, *dest, *tag)?;
                Ok((State::Ready(status), Post::None))
            }
            Kind::Recv {
                buf,
                count,
                ty,
                source,
                tag,
            } => {
                let target = recv_data(*buf, *count, ty)?;
                let (req, post) = start_recv(c, target, *source, *tag)?;
                Ok((State::Active(req), post))
            }
            Kind::Coll(d) => d.start(c),
        }
    }
}

/// Starts the lent persistent request `obj` (its buffers the program's,
/// by MPI's rule for persistent requests: [`Restart::start`]).
fn start_obj(obj: &mut ReqObj) -> Res {
    let Some(p) = obj.persist.as_deref() else {
        return Err(Fail::new(
            MPI_ERR_REQUEST,
            "MPI_Start needs a persistent request",
        ));
    };
    if !obj.inactive() {
        return Err(Fail::new(
            MPI_ERR_REQUEST,
            "the persistent request is already active",
        ));
    }
    let (state, post) = p.start().map_err(|f| f.on(obj.comm))?;
    obj.state = state;
    obj.post = post;
    Ok(())
}

/// Stores a new inactive persistent request; writes its handle.
pub(crate) fn create(comm: usize, c: Comm, kind: Kind, mut request: Out<'_, usize>) -> Res {
    if request.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null request pointer"));
    }
    let obj = ReqObj {
        state: State::Inactive,
        comm,
        post: Post::None,
        persist: Some(Box::new(Persist::new(c, kind))),
    };
    let h = rt()?.add_request(obj)?;
    request.set(h)
}

/// A rank argument that ferry will accept (or `PROC_NULL` / `ANY_SOURCE`).
fn check_peer(c: &Comm, rank: c_int) -> Res {
    // The remote group's size on an intercommunicator.
    let size = c.peer_size() as c_int;
    if rank >= size
        || (rank < 0 && rank != crate::abi::MPI_PROC_NULL && rank != crate::abi::MPI_ANY_SOURCE)
    {
        return Err(Fail::msg(
            MPI_ERR_RANK,
            format!("invalid rank {rank} (communicator size {size})"),
        ));
    }
    Ok(())
}

/// The arguments a persistent point-to-point init names its operation
/// by (beside the buffer): count and datatype, the peer and the tag.
struct Op {
    count: i64,
    datatype: usize,
    peer: c_int,
    tag: c_int,
}

/// Checks an init's arguments now rather than at the first start, and
/// stores the inactive request `kind` makes of them.
fn init(
    op: Op,
    comm: usize,
    request: Out<'_, usize>,
    kind: impl FnOnce(Op, usize, TypeRef) -> Kind,
) -> Res {
    let rt = rt()?;
    let c = rt.comm(comm)?;
    let ty = rt.comm_type(op.datatype)?;
    let count = count_arg(op.count)?;
    check_peer(&c.comm, op.peer)?;
    create(comm, c.comm.clone(), kind(op, count, ty), request)
}

/// `MPI_Send_init`, `MPI_Ssend_init`, `MPI_Rsend_init` and
/// `MPI_Bsend_init` (`mode` `None`: each start copies the data into the
/// attached buffer and completes at once), and their `_c` forms. The
/// buffer is the program's, read at each start.
pub(crate) fn send_init(
    mode: Option<SendMode>,
    buf: SendBuf,
    count: impl Into<i64>,
    datatype: usize,
    dest: c_int,
    tag: c_int,
    comm: usize,
    request: Out<'_, usize>,
) -> Res {
    let count = count.into();
    let op = Op {
        count,
        datatype,
        peer: dest,
        tag,
    };
    init(op, comm, request, |op, count, ty| Kind::Send {
        buf,
        count,
        ty,
        dest: op.peer,
        tag: op.tag,
        mode,
    })
}

/// `MPI_Recv_init` and `MPI_Recv_init_c`. The buffer is the program's,
/// written by each activation.
pub(crate) fn recv_init(
    buf: RecvBuf,
    count: impl Into<i64>,
    datatype: usize,
    source: c_int,
    tag: c_int,
    comm: usize,
    request: Out<'_, usize>,
) -> Res {
    let count = count.into();
    let op = Op {
        count,
        datatype,
        peer: source,
        tag,
    };
    init(op, comm, request, |op, count, ty| Kind::Recv {
        buf,
        count,
        ty,
        source: op.peer,
        tag: op.tag,
    })
}

/// `MPI_Start`.
pub(crate) fn start(request: Out<'_, usize>) -> Res {
    let h = request.get()?;
    if h == MPI_REQUEST_NULL || h == crate::abi::MPIX_REQUEST_EMPTY {
        return Err(Fail::new(
            MPI_ERR_REQUEST,
            "MPI_Start needs a persistent request",
        ));
    }
    let rt = rt()?;
    let mut obj = lend(rt, h)?;
    let r = start_obj(&mut obj);
    give_back(rt, h, obj)?;
    r
}

/// `MPI_Startall`: starts each in order; stops at the first failure.
/// The sends go to the device as one batch (`Comm::batch`: one doorbell
/// for a window of persistent sends on verbs).
pub(crate) fn startall(count: c_int, array_of_requests: &[usize]) -> Res {
    if count_arg(count)? == 0 {
        return Ok(());
    }
    let rt = rt()?;
    let start_each = || -> Res {
        for (i, &h) in array_of_requests.iter().enumerate() {
            let mut obj = lend(rt, h).map_err(|f| {
                Fail::msg(
                    MPI_ERR_REQUEST,
                    format!("request {i} of the array: {}", f.what),
                )
            })?;
            let r = start_obj(&mut obj);
            give_back(rt, h, obj)?;
            r?;
        }
        Ok(())
    };
    // The batch is the world's engine's, whichever communicator opens it.
    rt.world_comm.comm.batch(start_each)?
}
