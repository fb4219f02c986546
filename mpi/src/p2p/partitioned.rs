//! Partitioned point-to-point communication (MPI 4.0, MPI 4.1 section
//! 4): `MPI_Psend_init`, `MPI_Precv_init`, `MPI_Pready`,
//! `MPI_Pready_range`, `MPI_Pready_list`, `MPI_Parrived`.
//!
//! A partitioned request is a persistent one whose buffer is split into
//! `partitions` blocks of `count` elements. The message travels whole, on
//! the communicator's partitioned channel (`ferry::Comm::partitioned_channel`),
//! so it never matches an ordinary message or another construction's,
//! whatever the tags. The two sides may split it differently; only the
//! total must agree (a longer message is a truncation on the receiver).
//!
//! - **Send**: `MPI_Start` arms the partitions; the message leaves when
//!   the last one is marked ready, on whichever thread marks it. Marking
//!   one twice, or marking while the request is inactive, is an error.
//! - **Receive**: `MPI_Start` posts the receive of the whole buffer; a
//!   partition has arrived when the whole message has (MPICH does the
//!   same: the standard lets partitions arrive together). On an inactive
//!   request every partition has arrived (MPI 4.1).
//!
//! Threads: partitions are typically marked by the threads that filled
//! them, at once. `MPI_Pready*` and `MPI_Parrived` therefore do not take
//! the request out of the table as the completion calls do: they find its
//! shared state ([`Parted`]) in a registry keyed by the handle, and only
//! that state's lock orders them.

use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

use ferry::{Comm, SendMode};

use crate::abi::class::*;
use crate::abi::{MpiStatus, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_INFO_NULL, MPI_PROC_NULL};
use crate::datatype::buf::{recv_data, send_data};
use crate::datatype::{count_arg, TypeRef};
use crate::error::{Fail, Res};
use crate::ffi::args::{Out, RecvBuf, SendBuf};
use crate::p2p::messages::start_recv;
use crate::request::object::{Polled, Report, ReqObj, Restart, State};
use crate::request::post::Post;
use crate::state::rt;

/// What one side of a partitioned pair moves.
#[derive(Debug)]
enum Side {
    Send { buf: SendBuf, dest: c_int },
    Recv { buf: RecvBuf, source: c_int },
}

/// A partitioned request's description and the state of its current
/// activation, shared by its table entry (to start it), its completion
/// (to poll it) and the registry (for `MPI_Pready` and `MPI_Parrived`).
#[derive(Debug)]
pub(crate) struct Parted {
    /// The communicator's partitioned channel.
    channel: Comm,
    /// The program's communicator handle (whose handler errors go to).
    comm: usize,
    side: Side,
    partitions: usize,
    /// Elements of `ty` in the whole buffer.
    total: usize,
    ty: TypeRef,
    tag: c_int,
    now: Mutex<Activation>,
}

/// The current activation.
#[derive(Debug, Default)]
struct Activation {
    active: bool,
    /// Send side: which partitions are marked ready.
    ready: Vec<bool>,
    /// Send side: partitions not yet marked.
    left: usize,
    /// The message's operation, once posted (the receive at start, the
    /// send when the last partition is marked).
    op: Option<ReqObj>,
    /// Its report, once it completed.
    done: Option<Report>,
}

impl Parted {
    fn lock(&self) -> MutexGuard<'_, Activation> {
        // A panic while locked is caught at the boundary; the marks stay
        // as they were, which is still a consistent state.
        self.now.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Issues the whole message's send (all partitions are ready).
    fn send(&self, now: &mut Activation) -> Res {
        let Side::Send { buf, dest } = &self.side else {
            return Ok(());
        };
        let req = send_data(*buf, self.total, &self.ty)?.start(
            &self.channel,
            *dest,
            self.tag,
            SendMode::Standard,
        )?;
        now.op = Some(ReqObj::active(req, self.comm, Post::None));
        Ok(())
    }

    /// Tests the posted operation once; true once it has completed.
    fn advance(&self, now: &mut Activation) -> Res<bool> {
        if now.done.is_some() {
            return Ok(true);
        }
        let Some(op) = now.op.as_mut() else {
            return Ok(false);
        };
        if let Some(report) = op.test()? {
            now.op = None;
            now.done = Some(report);
        }
        Ok(now.done.is_some())
    }
}

/// Ends an activation with its report: the status, or the failure.
fn conclude(now: &mut Activation, report: Report) -> Res<MpiStatus> {
    now.active = false;
    report.result.map(|()| report.status)
}

/// The table entry's way to start an activation.
#[derive(Debug)]
struct Start(Arc<Parted>);

impl Restart for Start {
    fn start(&self) -> Res<(State, Post)> {
        let p = &self.0;
        let mut now = p.lock();
        *now = Activation {
            active: true,
            ready: vec![false; p.partitions],
            left: p.partitions,
            op: None,
            done: None,
        };
        match &p.side {
            Side::Recv { buf, source } => {
                let target = recv_data(*buf, p.total, &p.ty)?;
                let (req, post) = start_recv(&p.channel, target, *source, p.tag)?;
                now.op = Some(ReqObj::active(req, p.comm, post));
            }
            // Zero partitions: nothing to wait for.
            Side::Send { .. } if p.partitions == 0 => p.send(&mut now)?,
            Side::Send { .. } => {}
        }
        drop(now);
        Ok((
            State::Polled(Box::new(Activated(Arc::clone(p)))),
            Post::None,
        ))
    }
}

/// An activation as the completion calls see it.
#[derive(Debug)]
struct Activated(Arc<Parted>);

impl Polled for Activated {
    fn poll(&mut self) -> Res<Option<MpiStatus>> {
        let p = &self.0;
        let mut now = p.lock();
        if !p.advance(&mut now)? {
            return Ok(None);
        }
        let report = now.done.take().unwrap_or_else(Report::empty);
        conclude(&mut now, report).map(Some)
    }

    /// Blocks in ferry once the message is posted; before that (a send
    /// whose partitions are not all ready) it yields to the threads that
    /// mark them. The lock is not held while blocked, so `MPI_Parrived`
    /// on another thread answers meanwhile.
    fn wait(&mut self) -> Res<MpiStatus> {
        let p = &self.0;
        loop {
            let mut now = p.lock();
            if let Some(report) = now.done.take() {
                return conclude(&mut now, report);
            }
            match now.op.take() {
                Some(mut op) => {
                    drop(now);
                    let report = op.wait();
                    let mut now = p.lock();
                    return conclude(&mut now, report?);
                }
                None => {
                    drop(now);
                    std::thread::yield_now();
                }
            }
        }
    }

    /// A receive's post step must still run if the program frees the
    /// request while it is active.
    fn outlives_free(&self) -> bool {
        true
    }
}

/// The partitioned requests by handle (see the module docs). Entries of
/// freed requests die with them and are pruned when new ones come.
fn registry() -> MutexGuard<'static, HashMap<usize, Weak<Parted>>> {
    static REGISTRY: OnceLock<Mutex<HashMap<usize, Weak<Parted>>>> = OnceLock::new();
    REGISTRY
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// The partitioned request `request` names.
fn find(request: usize) -> Res<Arc<Parted>> {
    registry()
        .get(&request)
        .and_then(Weak::upgrade)
        .ok_or_else(|| Fail::new(MPI_ERR_REQUEST, "not a partitioned request"))
}

/// Checks an init's arguments and stores the inactive request.
#[allow(clippy::too_many_arguments)]
fn init(
    side: Side,
    partitions: c_int,
    count: i64,
    datatype: usize,
    peer: c_int,
    tag: c_int,
    comm: usize,
    info: usize,
    mut request: Out<'_, usize>,
) -> Res {
    if request.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null request pointer"));
    }
    let rt = rt()?;
    let c = rt.comm(comm)?;
    let ty = rt.comm_type(datatype)?;
    if info != MPI_INFO_NULL {
        crate::info::calls::check(info)?;
    }
    let partitions = usize::try_from(partitions)
        .map_err(|_| Fail::msg(MPI_ERR_ARG, format!("{partitions} partitions")))?;
    let total = count_arg(count)?
        .checked_mul(partitions)
        .ok_or_else(|| Fail::new(MPI_ERR_COUNT, "partitions × count overflows"))?;
    let size = c.comm.peer_size() as c_int;
    if peer == MPI_ANY_SOURCE || !(0..size).contains(&peer) && peer != MPI_PROC_NULL {
        return Err(Fail::msg(
            MPI_ERR_RANK,
            format!("invalid rank {peer} for partitioned communication (communicator size {size}; MPI_ANY_SOURCE is not allowed)"),
        ));
    }
    if tag == MPI_ANY_TAG || tag < 0 {
        return Err(Fail::msg(
            MPI_ERR_TAG,
            format!("invalid tag {tag} for partitioned communication (MPI_ANY_TAG is not allowed)"),
        ));
    }
    let parted = Arc::new(Parted {
        channel: c.comm.partitioned_channel(),
        comm,
        side,
        partitions,
        total,
        ty,
        tag,
        now: Mutex::new(Activation::default()),
    });
    let obj = ReqObj {
        state: State::Inactive,
        comm,
        post: Post::None,
        persist: Some(Box::new(Start(Arc::clone(&parted)))),
    };
    let h = rt.add_request(obj)?;
    {
        let mut reg = registry();
        reg.retain(|_, w| w.strong_count() > 0);
        reg.insert(h, Arc::downgrade(&parted));
    }
    request.set(h)
}

/// `MPI_Psend_init` (and the `_c` name the ABI's reference header
/// declares for it, with the same arguments).
#[allow(clippy::too_many_arguments)]
pub(crate) fn psend_init(
    buf: SendBuf,
    partitions: c_int,
    count: i64,
    datatype: usize,
    dest: c_int,
    tag: c_int,
    comm: usize,
    info: usize,
    request: Out<'_, usize>,
) -> Res {
    let side = Side::Send { buf, dest };
    init(
        side, partitions, count, datatype, dest, tag, comm, info, request,
    )
}

/// `MPI_Precv_init` (and its `_c` name).
#[allow(clippy::too_many_arguments)]
pub(crate) fn precv_init(
    buf: RecvBuf,
    partitions: c_int,
    count: i64,
    datatype: usize,
    source: c_int,
    tag: c_int,
    comm: usize,
    info: usize,
    request: Out<'_, usize>,
) -> Res {
    let side = Side::Recv { buf, source };
    init(
        side, partitions, count, datatype, source, tag, comm, info, request,
    )
}

/// Marks the partitions `parts` of the send request `request` ready; the
/// message leaves with the last.
fn mark(request: usize, parts: impl IntoIterator<Item = c_int>) -> Res {
    let p = find(request)?;
    if !matches!(p.side, Side::Send { .. }) {
        return Err(Fail::new(
            MPI_ERR_REQUEST,
            "MPI_Pready on a partitioned receive request",
        ));
    }
    let mut now = p.lock();
    if !now.active {
        return Err(Fail::new(
            MPI_ERR_REQUEST,
            "MPI_Pready on an inactive partitioned request (start it first)",
        ));
    }
    for part in parts {
        let i = usize::try_from(part)
            .ok()
            .filter(|&i| i < p.partitions)
            .ok_or_else(|| {
                Fail::msg(MPI_ERR_ARG, format!("partition {part} of {}", p.partitions))
            })?;
        if std::mem::replace(&mut now.ready[i], true) {
            return Err(Fail::msg(
                MPI_ERR_ARG,
                format!("partition {part} is already marked ready in this activation"),
            ));
        }
        now.left -= 1;
        if now.left == 0 {
            p.send(&mut now)?;
        }
    }
    Ok(())
}

/// `MPI_Pready`.
pub(crate) fn pready(partition: c_int, request: usize) -> Res {
    mark(request, [partition])
}

/// `MPI_Pready_range`: partitions `partition_low..=partition_high`.
pub(crate) fn pready_range(partition_low: c_int, partition_high: c_int, request: usize) -> Res {
    if partition_low > partition_high {
        return Err(Fail::msg(
            MPI_ERR_ARG,
            format!("an empty partition range {partition_low}..={partition_high}"),
        ));
    }
    mark(request, partition_low..=partition_high)
}

/// `MPI_Pready_list`.
pub(crate) fn pready_list(length: c_int, array_of_partitions: &[c_int], request: usize) -> Res {
    count_arg(length)?;
    mark(request, array_of_partitions.iter().copied())
}

/// `MPI_Parrived`: true once the whole message is in the buffer (then
/// every partition has arrived), or on an inactive request.
pub(crate) fn parrived(request: usize, partition: c_int, mut flag: Out<'_, c_int>) -> Res {
    let p = find(request)?;
    if !matches!(p.side, Side::Recv { .. }) {
        return Err(Fail::new(
            MPI_ERR_REQUEST,
            "MPI_Parrived on a partitioned send request",
        ));
    }
    if usize::try_from(partition).map_or(true, |i| i >= p.partitions) {
        return Err(Fail::msg(
            MPI_ERR_ARG,
            format!("partition {partition} of {}", p.partitions),
        ));
    }
    let mut now = p.lock();
    let arrived = !now.active || p.advance(&mut now)?;
    drop(now);
    flag.set(c_int::from(arrived))
}
