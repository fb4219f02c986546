//! Buffered mode: `MPI_Buffer_attach`, `MPI_Buffer_detach`, `MPI_Bsend`,
//! `MPI_Ibsend` (and the starts of `MPI_Bsend_init`).
//!
//! A buffered send copies its data into the attached buffer and sends it
//! from there, so it completes at once. The buffer is accounted as MPI
//! describes: each message takes its packed size plus
//! `MPI_BSEND_OVERHEAD` bytes, placed first-fit among the messages still
//! in flight (which are reaped, by testing them, before each placement);
//! a message that finds no room fails with `MPI_ERR_BUFFER`.
//! `MPI_Buffer_detach` waits until every buffered message is sent.
//! `MPI_BUFFER_AUTOMATIC` (MPI 4.1) attaches no memory: each message gets
//! a buffer of its own.
//!
//! A buffer attached to a communicator (MPI 4.1, `commbuf.rs`) serves the
//! buffered sends on it before the process's buffer; a session's serves
//! them after it (ferry does not record which session a communicator came
//! from, so any session's buffer serves a communicator with none of its
//! own when no process buffer is attached). Those are kept here by owner.

use std::ffi::c_int;

use ferry::{Comm, Request, SendMode};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::datatype::buf::{bytes_mut, pack_into, send_data, SendData};

use crate::abi::class::*;
use crate::abi::{rank_in, tag_in, MpiStatus, MPI_PROC_NULL};
use crate::datatype::{count_arg, TypeRef};
use crate::error::{Fail, Res};
use crate::ffi::args::{Out, RecvBuf, SendBuf};
use crate::ffi::cell::LevelCell;
use crate::state::ChapterCell;
use crate::state::{lock, rt, Runtime};

/// `MPI_BSEND_OVERHEAD` (the ABI's value).
pub(crate) const OVERHEAD: usize = 512;

/// `MPI_BUFFER_AUTOMATIC`.
const AUTOMATIC: usize = 2;

/// Numbers the buffered messages of every buffer in the order they were
/// buffered (Relaxed: a counter; the messages themselves are behind their
/// buffer's lock).
static NUMBER: AtomicU64 = AtomicU64::new(0);

/// The next buffered message's number.
fn number() -> u64 {
    NUMBER.fetch_add(1, Ordering::Relaxed)
}

/// The number the next buffered message will get: a flush started now
/// waits for the messages numbered below it.
pub(crate) fn mark() -> u64 {
    NUMBER.load(Ordering::Relaxed)
}

/// Who a buffer other than the process's is attached to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owner {
    /// A communicator, by context id (`MPI_Comm_attach_buffer`).
    Comm(u32),
    /// A session, by handle (`MPI_Session_attach_buffer`).
    Session(usize),
}

/// The buffers attached to communicators and sessions.
pub(crate) static OWNED_BUFS: Mutex<Vec<(Owner, Attached)>> = Mutex::new(Vec::new());

/// The attached buffer and the messages in flight from it.
#[derive(Debug)]
pub(crate) struct Attached {
    /// The memory and its size; `None` for `MPI_BUFFER_AUTOMATIC`.
    region: Option<(RecvBuf, usize)>,
    /// In flight, by offset: `(offset, reserved bytes, request, number)`.
    pending: Vec<(usize, usize, Request, u64)>,
}

impl Attached {
    /// The buffer `MPI_Buffer_attach(buffer, size)` (or a communicator's
    /// attach) describes.
    pub(crate) fn new(buffer: RecvBuf, size: impl Into<i64>) -> Res<Attached> {
        let size = size.into();
        let size = usize::try_from(size)
            .map_err(|_| Fail::msg(MPI_ERR_ARG, format!("invalid buffer size {size}")))?;
        let region = match buffer.addr() {
            AUTOMATIC => None,
            0 if size > 0 => {
                return Err(Fail::new(
                    MPI_ERR_BUFFER,
                    "a null buffer with a non-zero size",
                ))
            }
            _ => Some((buffer, size)),
        };
        Ok(Attached {
            region,
            pending: Vec::new(),
        })
    }

    /// `(address, size)` as detach gives them back.
    pub(crate) fn region(&self) -> (usize, usize) {
        self.region
            .map_or((AUTOMATIC, 0), |(b, size)| (b.addr(), size))
    }

    /// Waits until every message in flight is sent (a failure has no
    /// request to report it on).
    pub(crate) fn flush(&mut self) {
        for (_, _, mut r, _) in self.pending.drain(..) {
            let _ = r.wait();
        }
    }

    /// True once every message buffered before [`mark`] gave `mark` is
    /// sent.
    pub(crate) fn flushed(&mut self, mark: u64) -> bool {
        self.reap();
        self.pending.iter().all(|p| p.3 >= mark)
    }

    /// Drops the messages that were sent.
    fn reap(&mut self) {
        self.pending
            .retain_mut(|(_, _, r, _)| !matches!(r.test(), Ok(Some(_)) | Err(_)));
    }

    /// The first offset with `need` free bytes.
    fn fit(&self, need: usize, size: usize) -> Option<usize> {
        let mut at = 0;
        for &(off, len, _, _) in &self.pending {
            if off - at >= need {
                return Some(at);
            }
            at = off + len;
        }
        (size.checked_sub(at)? >= need).then_some(at)
    }

    /// Bytes reserved by messages in flight.
    fn used(&self) -> usize {
        self.pending.iter().map(|&(_, len, _, _)| len).sum()
    }
}

/// A buffered send of `count` elements at `buf`: copied out, sent, and
/// complete. The status of its (completed) request.
pub(crate) fn bsend_wide(
    c: &Comm,
    buf: SendBuf,
    count: usize,
    ty: &TypeRef,
    dest: c_int,
    tag: c_int,
) -> Res<MpiStatus> {
    let rt = rt()?;
    let len = ty.bytes(count as i64)?;
    if dest == MPI_PROC_NULL {
        return Ok(MpiStatus::EMPTY);
    }
    {
        let mut bufs = lock(&OWNED_BUFS);
        let own = Owner::Comm(c.context());
        if let Some((_, a)) = bufs.iter_mut().find(|(k, _)| *k == own) {
            return place(a, c, buf, count, ty, len, dest, tag);
        }
    }
    let done = rt.bsend().with(|slot| {
        slot.as_mut()
            .map(|a| place(a, c, buf, count, ty, len, dest, tag))
    })?;
    if let Some(r) = done {
        return r;
    }
    let mut bufs = lock(&OWNED_BUFS);
    let a = bufs
        .iter_mut()
        .find(|(k, _)| matches!(k, Owner::Session(h) if crate::session::check(*h).is_ok()))
        .map(|(_, a)| a)
        .ok_or_else(|| {
            Fail::new(
                MPI_ERR_BUFFER,
                "a buffered send with no buffer attached (MPI_Buffer_attach)",
            )
        })?;
    place(a, c, buf, count, ty, len, dest, tag)
}

/// Copies a buffered message into `a` and sends it from there.
#[allow(clippy::too_many_arguments)]
fn place(
    a: &mut Attached,
    c: &Comm,
    buf: SendBuf,
    count: usize,
    ty: &TypeRef,
    len: usize,
    dest: c_int,
    tag: c_int,
) -> Res<MpiStatus> {
    a.reap();
    let Some((base, size)) = a.region else {
        let v = send_data(buf, count, ty)?.into_vec();
        let req = c.isend(v, rank_in(dest), tag_in(tag))?;
        a.pending.push((0, 0, req, number()));
        return Ok(MpiStatus::EMPTY);
    };
    let need = len + OVERHEAD;
    let off = a.fit(need, size).ok_or_else(|| {
            Fail::msg(
                MPI_ERR_BUFFER,
                format!(
                    "the attached buffer ({size} bytes, {} in use) has no room for {len} bytes + MPI_BSEND_OVERHEAD ({OVERHEAD})",
                    a.used()
                ),
            )
        })?;
    // `[off, off + len)` lies in the attached buffer (fit) and no message
    // in flight uses it; the program gave the buffer to MPI until it
    // detaches it, and detaching waits for the send.
    let at = base.offset(off as isize);
    pack_into(buf, count, ty, bytes_mut(at, len)?)?;
    let req = SendData::attached(at, len)?.start(c, dest, tag, SendMode::Standard)?;
    let i = a.pending.partition_point(|p| p.0 < off);
    a.pending.insert(i, (off, need, req, number()));
    Ok(MpiStatus::EMPTY)
}

/// Detaches the buffer, waiting for its messages: `(address, size)`, or
/// `None` if none was attached.
pub(crate) fn detach(rt: &Runtime) -> Res<Option<(usize, usize)>> {
    let Some(mut a) = rt.bsend().with(Option::take)? else {
        return Ok(None);
    };
    a.flush();
    Ok(Some(a.region()))
}

/// At the runtime's end (see [`detach_at_finalize`]): the process's
/// buffer and every communicator's and session's are flushed and
/// detached.
pub(crate) fn detach_all(rt: &Runtime) -> Res {
    detach(rt)?;
    let bufs = std::mem::take(&mut *lock(&OWNED_BUFS));
    for (_, mut a) in bufs {
        a.flush();
    }
    Ok(())
}

/// The process's attached buffer (`MPI_Buffer_attach`).
static BSEND: ChapterCell<Option<Attached>> = ChapterCell::new(|| None);

impl Runtime {
    /// The process's attached buffer, if any.
    pub(crate) fn bsend(&self) -> &'static LevelCell<Option<Attached>> {
        BSEND.of(self)
    }
}

/// Has `MPI_Finalize` flush and detach every attached buffer (registered
/// with the first one).
pub(crate) fn detach_at_finalize() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| crate::state::before_finalize(detach_all));
}

/// `MPI_Buffer_attach(_c)`: the process's buffer of `size` bytes.
pub(crate) fn attach(buffer: RecvBuf, size: i64) -> Res {
    let rt = rt()?;
    let a = Attached::new(buffer, size)?;
    detach_at_finalize();
    rt.bsend().with(|slot| {
        if slot.is_some() {
            return Err(Fail::new(
                MPI_ERR_BUFFER,
                "a buffer is already attached (MPI_Buffer_detach it first)",
            ));
        }
        *slot = Some(a);
        Ok(())
    })?
}

/// The body of `MPI_Bsend` and `MPI_Bsend_c` (whose counts are `MPI_Count`s).
pub(crate) fn bsend(
    buf: SendBuf,
    count: impl Into<i64>,
    datatype: usize,
    dest: c_int,
    tag: c_int,
    comm: usize,
) -> Res {
    let count: i64 = count.into();
    let rt = rt()?;
    let c = rt.comm(comm)?;
    let ty = rt.comm_type(datatype)?;
    bsend_wide(&c.comm, buf, count_arg(count)?, &ty, dest, tag)?;
    Ok(())
}

/// The body of `MPI_Ibsend` and `MPI_Ibsend_c` (whose counts are `MPI_Count`s).
pub(crate) fn ibsend(
    buf: SendBuf,
    count: impl Into<i64>,
    datatype: usize,
    dest: c_int,
    tag: c_int,
    comm: usize,
    mut request: Out<'_, usize>,
) -> Res {
    let count: i64 = count.into();
    let rt = rt()?;
    let c = rt.comm(comm)?;
    let ty = rt.comm_type(datatype)?;
    crate::p2p::messages::check_request(&request)?;
    bsend_wide(&c.comm, buf, count_arg(count)?, &ty, dest, tag)?;
    // Complete once buffered: MPIX_REQUEST_EMPTY.
    request.set(crate::abi::MPIX_REQUEST_EMPTY)
}
