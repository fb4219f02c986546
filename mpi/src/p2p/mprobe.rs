//! Matched probe: `MPI_Mprobe`, `MPI_Improbe`, `MPI_Mrecv`, `MPI_Imrecv`.
//!
//! A matched message is a ferry `Message` in the message table; its handle
//! goes to the program. A probe of `MPI_PROC_NULL` gives
//! `MPI_MESSAGE_NO_PROC`, whose receive completes at once with the
//! `MPI_PROC_NULL` status; a received message's handle becomes
//! `MPI_MESSAGE_NULL`.
//!
//! `MPI_Mrecv` into contiguous data receives in place (ferry's blocking
//! `Message::recv`); ferry takes a matched message's nonblocking receive
//! into an owned buffer only, so `MPI_Imrecv` (and any non-contiguous
//! datatype) stages it and copies out on completion.

use crate::datatype::buf::{recv_data, staged, RecvData};

use crate::abi::class::*;
use crate::abi::*;
use crate::datatype::count_arg;
use crate::error::{Fail, Res};
use crate::ffi::args::{Out, RecvBuf, StatusOut};
use crate::ffi::cell::LevelCell;
use crate::handle::{Kind, Table};
use crate::request::object::{Report, ReqObj};
use crate::request::post::Post;
use crate::state::ChapterCell;
use crate::state::{rt, Runtime};

/// Messages taken by `MPI_Mprobe` / `MPI_Improbe` (their engine entries go
/// with the world).
static MESSAGES: ChapterCell<Table<MsgObj>> =
    ChapterCell::emptied_at_finalize(|| Table::new(Kind::Message));

impl Runtime {
    /// The messages taken and not yet received.
    pub(crate) fn messages(&self) -> &'static LevelCell<Table<MsgObj>> {
        MESSAGES.of(self)
    }
}

/// A matched message.
#[derive(Debug)]
pub(crate) struct MsgObj {
    msg: ferry::Message,
    /// The communicator's handle (for errors).
    comm: usize,
    /// What the probe reported (the status of a truncated in-place
    /// receive, which ferry reports as an error alone).
    probed: ferry::Status,
}

/// The status of a receive from `MPI_PROC_NULL`.
fn proc_null_status() -> MpiStatus {
    MpiStatus {
        source: MPI_PROC_NULL,
        tag: MPI_ANY_TAG,
        ..MpiStatus::EMPTY
    }
}

/// Stores a probed message; its handle.
pub(crate) fn store(
    rt: &Runtime,
    msg: ferry::Message,
    status: ferry::Status,
    comm: usize,
) -> Res<usize> {
    if msg.is_no_proc() {
        return Ok(MPI_MESSAGE_NO_PROC);
    }
    rt.messages()
        .with(|t| {
            t.insert(MsgObj {
                msg,
                comm,
                probed: status,
            })
        })?
        .ok_or_else(|| Fail::new(MPI_ERR_INTERN, "too many matched messages"))
}

/// Takes the message `message` names out of the table (the program's
/// handle becomes `MPI_MESSAGE_NULL`); `None` for `MPI_MESSAGE_NO_PROC`.
fn take(rt: &Runtime, message: &mut Out<'_, usize>) -> Res<Option<MsgObj>> {
    let obj = match message.get()? {
        MPI_MESSAGE_NO_PROC => None,
        MPI_MESSAGE_NULL => {
            return Err(Fail::new(
                MPI_ERR_REQUEST,
                "MPI_MESSAGE_NULL cannot be received",
            ))
        }
        h => Some(
            rt.messages()
                .with(|t| t.remove(h))?
                .map_err(|b| Fail::handle(MPI_ERR_REQUEST, b, "message"))?,
        ),
    };
    message.set(MPI_MESSAGE_NULL)?;
    Ok(obj)
}

/// Starts the receive of a matched message into a staging vector, or a
/// segmented buffer over the program's memory (large non-contiguous
/// data); the request object.
fn start_unpacked(
    obj: MsgObj,
    buf: RecvBuf,
    count: usize,
    ty: &crate::datatype::TypeRef,
) -> Res<ReqObj> {
    let (started, post) = match recv_data(buf, count, ty)? {
        RecvData::Streamed(b) => (obj.msg.irecv_buf(b, None), Post::None),
        _ => {
            let RecvData::Staged { len, unpack } = staged(buf, count, ty)? else {
                return Err(Fail::new(MPI_ERR_INTERN, "a staged receive was not staged"));
            };
            (
                obj.msg.irecv(vec![0u8; len]),
                Post::Unpack(Box::new(unpack)),
            )
        }
    };
    let req = started.map_err(|e| Fail::from(e).on(obj.comm))?;
    Ok(ReqObj::active(req, obj.comm, post))
}

/// The body of `MPI_Mrecv` and `MPI_Mrecv_c` (whose counts are `MPI_Count`s).
pub(crate) fn mrecv(
    buf: RecvBuf,
    count: impl Into<i64>,
    datatype: usize,
    mut message: Out<'_, usize>,
    mut status: StatusOut<'_>,
) -> Res {
    let count: i64 = count.into();
    let rt = rt()?;
    let ty = rt.comm_type(datatype)?;
    let n = count_arg(count)?;
    let Some(obj) = take(rt, &mut message)? else {
        status.set(proc_null_status());
        return Ok(());
    };
    let report = match recv_data(buf, n, &ty)? {
        RecvData::Raw(mut raw) => {
            let comm = obj.comm;
            let probed = obj.probed;
            let len = raw.len();
            match obj.msg.recv(raw.bytes()?) {
                Ok(s) => Report::ok(MpiStatus::from_ferry(&s)),
                Err(e) => {
                    let f = Fail::from(e).on(comm);
                    let mut s = MpiStatus::from_ferry(&probed);
                    s.set_bytes(probed.bytes.min(len) as u64);
                    s.error = f.class;
                    Report {
                        status: s,
                        result: Err(f),
                        arecv: None,
                    }
                }
            }
        }
        _ => start_unpacked(obj, buf, n, &ty)?.wait()?,
    };
    report.write_status(&mut status)
}

/// The body of `MPI_Imrecv` and `MPI_Imrecv_c` (whose counts are `MPI_Count`s).
pub(crate) fn imrecv(
    buf: RecvBuf,
    count: impl Into<i64>,
    datatype: usize,
    mut message: Out<'_, usize>,
    mut request: Out<'_, usize>,
) -> Res {
    let count: i64 = count.into();
    let rt = rt()?;
    let ty = rt.comm_type(datatype)?;
    let n = count_arg(count)?;
    crate::p2p::messages::check_request(&request)?;
    let obj = match take(rt, &mut message)? {
        Some(m) => start_unpacked(m, buf, n, &ty)?,
        None => ReqObj::ready(proc_null_status(), MPI_COMM_SELF),
    };
    let h = rt.add_request(obj)?;
    request.set(h)
}
