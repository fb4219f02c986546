//! The operations: `MPI_Put`, `MPI_Get`, `MPI_Accumulate`,
//! `MPI_Get_accumulate`, `MPI_Fetch_and_op`, `MPI_Compare_and_swap`, the
//! request forms `MPI_Rput`, `MPI_Rget`, `MPI_Raccumulate`,
//! `MPI_Rget_accumulate`, and the `_c` forms (their counts are
//! `MPI_Count`s). A target rank of `MPI_PROC_NULL` makes any of them do
//! nothing (a request form's request is complete at once).
//!
//! On a node window (every member on this node: `ferry::rma`'s node
//! windows) an operation is done in its call: the origin's data goes
//! from where it lies, through a packed copy only when its datatype is
//! not contiguous, into the target's memory, and a fetch lands in the
//! origin's buffer the same way. On any other window the origin's data
//! (any datatype) is packed into the request; the target datatype is cut
//! into the contiguous byte ranges it covers, which travel in one request
//! (a scattered one when they are several: `ferry::rma`), and a fetch's
//! reply lands through the origin's datatype, as a received message does
//! (accumulates stay atomic per element: each range holds whole
//! elements).

use std::ffi::c_int;

use ferry::ferry_core::coll::{Datatype, ReduceOp};
use ferry::ferry_core::rma::AccOp;

use crate::abi::class::*;
use crate::abi::{MpiStatus, MPI_NO_OP, MPI_PROC_NULL, MPI_REPLACE};

use crate::datatype::buf::{bytes_mut, pack_into, recv_data, send_data, unpack_into};
use crate::datatype::{count_arg, TypeRef};
use crate::error::{Fail, Res};
use crate::ffi::args::{Out, RecvBuf, SendBuf};
use crate::p2p::messages::start_recv;
use crate::request::object::{Polled, ReqObj, State};
use crate::request::post::Post;
use crate::state::rt;

use super::{win_of, WinObj};

/// Byte ranges (start, length) of a target's window.
enum Ranges {
    One([(u64, u64); 1]),
    Many(Vec<(u64, u64)>),
}

impl Ranges {
    fn as_slice(&self) -> &[(u64, u64)] {
        match self {
            Ranges::One(r) => r,
            Ranges::Many(v) => v,
        }
    }
}

/// Where an operation goes: the target's byte ranges, in the order its
/// datatype lists them.
struct Target {
    rank: c_int,
    ranges: Ranges,
    bytes: usize,
}

impl Target {
    /// The target of `count` elements of `datatype` at displacement `disp`
    /// of `rank`'s window; `None` for `MPI_PROC_NULL`.
    fn of(
        w: &WinObj,
        rank: c_int,
        disp: isize,
        count: i64,
        datatype: usize,
    ) -> Res<Option<Target>> {
        if rank == MPI_PROC_NULL {
            return Ok(None);
        }
        let unit = usize::try_from(rank)
            .ok()
            .and_then(|r| w.disp_units.get(r))
            .copied()
            .ok_or_else(|| Fail::msg(MPI_ERR_RANK, format!("invalid target rank {rank}")))?;
        let ty = rt()?.comm_type(datatype)?;
        let count = count_arg(count)?;
        let bytes = ty.bytes(count as i64)?;
        let base = i64::try_from(disp)
            .ok()
            .and_then(|d| d.checked_mul(unit))
            .filter(|&b| b >= 0)
            .ok_or_else(|| {
                Fail::msg(MPI_ERR_DISP, format!("invalid target displacement {disp}"))
            })?;
        let at = |off: i64| -> Res<u64> {
            u64::try_from(base + off).map_err(|_| {
                Fail::new(MPI_ERR_DISP, "the target datatype reaches below the window")
            })
        };
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        if let Some(off) = ty.contiguous_from(count) {
            // The common case, without an allocation.
            let ranges = match bytes {
                0 => Ranges::Many(Vec::new()),
                _ => Ranges::One([(at(off as i64)?, bytes as u64)]),
            };
            return Ok(Some(Target {
                rank,
                ranges,
                bytes,
            }));
        } else {
            let l = ty.layout();
            let extent = l.extent() as i64;
            for i in 0..count as i64 {
                for b in &l.blocks {
                    let start = at(i * extent + b.disp as i64)?;
                    match ranges.last_mut() {
                        Some(last) if last.0 + last.1 == start => last.1 += b.len as u64,
                        _ => ranges.push((start, b.len as u64)),
                    }
                }
            }
        }
        Ok(Some(Target {
            rank,
            ranges: Ranges::Many(ranges),
            bytes,
        }))
    }

    /// Checks that the origin's `n` bytes match.
    fn matches(&self, n: usize) -> Res {
        if n != self.bytes {
            return Err(Fail::msg(
                MPI_ERR_COUNT,
                format!(
                    "the origin's data is {n} bytes, the target's {}",
                    self.bytes
                ),
            ));
        }
        Ok(())
    }

    /// The one range of a contiguous target.
    fn single(&self, what: &str) -> Res<(u64, u64)> {
        match self.ranges.as_slice() {
            [] => Ok((0, 0)),
            [one] => Ok(*one),
            _ => Err(Fail::msg(
                MPI_ERR_UNSUPPORTED_OPERATION,
                format!("{what} into a non-contiguous target datatype"),
            )),
        }
    }
}

/// Runs `f` on the origin's `count` elements of `datatype`: the
/// program's bytes where they lie if contiguous, else packed.
fn with_origin<R>(
    buf: SendBuf,
    count: i64,
    datatype: usize,
    f: impl FnOnce(&[u8]) -> Res<R>,
) -> Res<R> {
    let data = send_data(buf, count_arg(count)?, &rt()?.comm_type(datatype)?)?;
    if let Some(bytes) = data.slice() {
        return f(bytes);
    }
    f(&data.into_vec())
}

/// Runs `f` on a writable view of the origin's `count` elements of
/// `datatype` (`bytes` long): the program's bytes if contiguous, else a
/// copy unpacked into them after.
fn with_result(
    buf: RecvBuf,
    count: i64,
    datatype: usize,
    bytes: usize,
    f: impl FnOnce(&mut [u8]) -> Res,
) -> Res {
    let ty = rt()?.comm_type(datatype)?;
    let count = count_arg(count)?;
    if bytes == 0 {
        return f(&mut []);
    }
    if let Some(off) = ty.contiguous_from(count) {
        return f(bytes_mut(buf.offset(off), bytes)?);
    }
    let mut staged = vec![0u8; bytes];
    f(&mut staged)?;
    unpack_into(&staged, buf, count, &ty)
}

/// The accumulate op and element type of MPI op `op` on `ty`.
fn acc_of(op: usize, ty: &TypeRef) -> Res<(AccOp, Datatype)> {
    // A replace or no-op is atomic on the datatype's elements when they
    // are of a size an atomic takes, else on the whole range.
    let whole = || match ty.uniform().map(|(p, _)| p.size) {
        Some(2) => Datatype::U16,
        Some(4) => Datatype::U32,
        Some(8) => Datatype::U64,
        _ => Datatype::U8,
    };
    match op {
        MPI_REPLACE => return Ok((AccOp::Replace, whole())),
        MPI_NO_OP => return Ok((AccOp::NoOp, whole())),
        _ => {}
    }
    let (p, _) = ty.uniform().ok_or_else(|| {
        Fail::new(
            MPI_ERR_TYPE,
            "an accumulate's datatype must hold one predefined type",
        )
    })?;
    let (r, d) = crate::reduce::predefined_op(op, p)?;
    if matches!(r, ReduceOp::User(_)) {
        return Err(Fail::msg(
            MPI_ERR_UNSUPPORTED_OPERATION,
            format!(
                "one-sided accumulates on {} (ferry reduces it in the library only)",
                p.name
            ),
        ));
    }
    Ok((AccOp::Reduce(r), d))
}

/// A request complete at once (an operation on `MPI_PROC_NULL`).
fn done(win: usize) -> ReqObj {
    ReqObj::ready(MpiStatus::EMPTY, win)
}

/// The operations of one call as one request: complete when all are.
#[derive(Debug)]
struct Together(Vec<ReqObj>);

impl Polled for Together {
    fn poll(&mut self) -> Res<Option<MpiStatus>> {
        let mut i = 0;
        while i < self.0.len() {
            match self.0[i].test().map_err(refused)? {
                Some(r) => {
                    r.result.map_err(refused)?;
                    self.0.swap_remove(i);
                }
                None => i += 1,
            }
        }
        Ok(self.0.is_empty().then_some(MpiStatus::EMPTY))
    }

    fn outlives_free(&self) -> bool {
        true
    }
}

/// A target refuses a request it cannot apply by answering with one byte
/// more than the reply holds: a truncation here, which is what
/// `MPI_ERR_RMA_CONFLICT` says (origin and target disagree on the window).
pub(crate) fn refused(f: Fail) -> Fail {
    if f.class == MPI_ERR_TRUNCATE {
        Fail::new(
            MPI_ERR_RMA_CONFLICT,
            "the target refused the operation (memory it does not expose)",
        )
    } else {
        f
    }
}

/// One request for the call's operations. A put's or accumulate's single
/// send stands as it is; a fetching operation's reply is watched for a
/// refusal ([`refused`]).
fn together(mut objs: Vec<ReqObj>, win: usize, fetches: bool) -> ReqObj {
    match objs.len() {
        0 => done(win),
        1 if !fetches => objs.pop().unwrap_or_else(|| done(win)),
        _ => ReqObj {
            state: State::Polled(Box::new(Together(objs))),
            comm: win,
            post: Post::None,
            persist: None,
        },
    }
}

/// Stores `obj` as the call's request and writes its handle.
fn store(obj: ReqObj, mut request: Out<'_, usize>) -> Res {
    if request.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null request pointer"));
    }
    request.set(rt()?.add_request(obj)?)
}

/// Keeps `objs` (operations without a request) until a synchronization
/// covers `target`.
fn keep(w: &WinObj, target: c_int, objs: Vec<ReqObj>) {
    if objs.is_empty() {
        return;
    }
    let mut p = crate::state::lock(&w.pending);
    w.kept
        .fetch_add(objs.len(), std::sync::atomic::Ordering::AcqRel);
    p.extend(objs.into_iter().map(|o| (target, o)));
}

/// Puts `data` over the target's ranges: the sends' requests.
fn put_ranges(
    w: &WinObj,
    win: usize,
    t: &Target,
    data: &[u8],
    acc: Option<(AccOp, Datatype)>,
) -> Res<Vec<ReqObj>> {
    t.matches(data.len())?;
    let ranges = t.ranges.as_slice();
    let r = match (ranges, &acc) {
        ([], _) => return Ok(Vec::new()),
        ([(disp, _)], None) => w.win.put_bytes(t.rank, *disp, data)?,
        ([(disp, _)], Some((op, dtype))) => {
            w.win
                .accumulate_bytes(t.rank, *disp, data, op.clone(), *dtype)?
        }
        (_, None) => w.win.put_scattered(t.rank, ranges, data)?,
        (_, Some((op, dtype))) => {
            w.win
                .accumulate_scattered(t.rank, ranges, data, op.clone(), *dtype)?
        }
    };
    // Done in its call (a node window): nothing to keep.
    if r.is_empty() {
        return Ok(Vec::new());
    }
    Ok(vec![ReqObj::active(r, win, Post::None)])
}

/// `MPI_Rput` (`_c`) and, dropping the request, `MPI_Put` (`_c`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn rput(
    origin_addr: SendBuf,
    origin_count: impl Into<i64>,
    origin_datatype: usize,
    target_rank: c_int,
    target_disp: isize,
    target_count: impl Into<i64>,
    target_datatype: usize,
    win: usize,
    request: Out<'_, usize>,
) -> Res {
    let w = win_of(win)?;
    let Some(t) = Target::of(
        &w,
        target_rank,
        target_disp,
        target_count.into(),
        target_datatype,
    )?
    else {
        return store(done(win), request);
    };
    let objs = with_origin(origin_addr, origin_count.into(), origin_datatype, |data| {
        put_ranges(&w, win, &t, data, None)
    })?;
    store(together(objs, win, false), request)
}

/// `MPI_Put` and `MPI_Put_c`: the data is copied into the requests, so
/// nothing is kept.
#[allow(clippy::too_many_arguments)]
pub(crate) fn put(
    origin_addr: SendBuf,
    origin_count: impl Into<i64>,
    origin_datatype: usize,
    target_rank: c_int,
    target_disp: isize,
    target_count: impl Into<i64>,
    target_datatype: usize,
    win: usize,
) -> Res {
    let w = win_of(win)?;
    let Some(t) = Target::of(
        &w,
        target_rank,
        target_disp,
        target_count.into(),
        target_datatype,
    )?
    else {
        return Ok(());
    };
    with_origin(origin_addr, origin_count.into(), origin_datatype, |data| {
        put_ranges(&w, win, &t, data, None).map(drop)
    })
}

/// `MPI_Raccumulate` (`_c`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn raccumulate(
    origin_addr: SendBuf,
    origin_count: impl Into<i64>,
    origin_datatype: usize,
    target_rank: c_int,
    target_disp: isize,
    target_count: impl Into<i64>,
    target_datatype: usize,
    op: usize,
    win: usize,
    request: Out<'_, usize>,
) -> Res {
    let w = win_of(win)?;
    let Some(t) = Target::of(
        &w,
        target_rank,
        target_disp,
        target_count.into(),
        target_datatype,
    )?
    .filter(|t| t.bytes > 0)
    // nothing to combine: nothing to check
    else {
        return store(done(win), request);
    };
    let acc = acc_of(op, &rt()?.comm_type(target_datatype)?)?;
    let objs = with_origin(origin_addr, origin_count.into(), origin_datatype, |data| {
        put_ranges(&w, win, &t, data, Some(acc))
    })?;
    store(together(objs, win, false), request)
}

/// `MPI_Accumulate` (`_c`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn accumulate(
    origin_addr: SendBuf,
    origin_count: impl Into<i64>,
    origin_datatype: usize,
    target_rank: c_int,
    target_disp: isize,
    target_count: impl Into<i64>,
    target_datatype: usize,
    op: usize,
    win: usize,
) -> Res {
    let w = win_of(win)?;
    let Some(t) = Target::of(
        &w,
        target_rank,
        target_disp,
        target_count.into(),
        target_datatype,
    )?
    .filter(|t| t.bytes > 0)
    // nothing to combine: nothing to check
    else {
        return Ok(());
    };
    let acc = acc_of(op, &rt()?.comm_type(target_datatype)?)?;
    with_origin(origin_addr, origin_count.into(), origin_datatype, |data| {
        put_ranges(&w, win, &t, data, Some(acc)).map(drop)
    })
}

/// Starts the gets of `count` elements of `datatype` at `origin` from
/// the target's ranges: their requests.
fn get_ranges(
    w: &WinObj,
    win: usize,
    t: &Target,
    origin: RecvBuf,
    count: i64,
    datatype: usize,
) -> Res<Vec<ReqObj>> {
    let rt = rt()?;
    let ty = rt.comm_type(datatype)?;
    let n = count_arg(count)?;
    t.matches(ty.bytes(n as i64)?)?;
    if w.win.is_node_window() {
        with_result(origin, count, datatype, t.bytes, |out| {
            let mut at = 0;
            for &(disp, len) in t.ranges.as_slice() {
                w.win
                    .get_to(t.rank, disp, &mut out[at..at + len as usize])?;
                at += len as usize;
            }
            Ok(())
        })?;
        return Ok(Vec::new());
    }
    // The reply (the ranges' bytes in order) lands through the origin's
    // datatype, as a receive's message does.
    let recv = |c: &ferry::Comm, from, tag| {
        Ok(recv_data(origin, n, &ty).and_then(|target| start_recv(c, target, from, tag)))
    };
    let (req, post) = match t.ranges.as_slice() {
        [] => return Ok(Vec::new()),
        [(disp, len)] => w.win.get_into(t.rank, *disp, *len, recv)??,
        ranges => w.win.get_scattered_into(t.rank, ranges, recv)??,
    };
    Ok(vec![ReqObj::active(req, win, post)])
}

/// `MPI_Rget` (`_c`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn rget(
    origin_addr: RecvBuf,
    origin_count: impl Into<i64>,
    origin_datatype: usize,
    target_rank: c_int,
    target_disp: isize,
    target_count: impl Into<i64>,
    target_datatype: usize,
    win: usize,
    request: Out<'_, usize>,
) -> Res {
    let w = win_of(win)?;
    let Some(t) = Target::of(
        &w,
        target_rank,
        target_disp,
        target_count.into(),
        target_datatype,
    )?
    else {
        return store(done(win), request);
    };
    let objs = get_ranges(
        &w,
        win,
        &t,
        origin_addr,
        origin_count.into(),
        origin_datatype,
    )?;
    store(together(objs, win, true), request)
}

/// `MPI_Get` (`_c`): kept until the synchronization that completes it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn get(
    origin_addr: RecvBuf,
    origin_count: impl Into<i64>,
    origin_datatype: usize,
    target_rank: c_int,
    target_disp: isize,
    target_count: impl Into<i64>,
    target_datatype: usize,
    win: usize,
) -> Res {
    let w = win_of(win)?;
    let Some(t) = Target::of(
        &w,
        target_rank,
        target_disp,
        target_count.into(),
        target_datatype,
    )?
    else {
        return Ok(());
    };
    let objs = get_ranges(
        &w,
        win,
        &t,
        origin_addr,
        origin_count.into(),
        origin_datatype,
    )?;
    keep(&w, target_rank, objs);
    Ok(())
}

/// A fetching accumulate's arguments beside the target.
struct Fetch {
    origin: SendBuf,
    origin_count: i64,
    origin_datatype: usize,
    result: RecvBuf,
    result_count: i64,
    result_datatype: usize,
    op: usize,
}

/// Starts a get-accumulate: its request (`None` for `MPI_PROC_NULL`).
fn start_fetch(
    w: &WinObj,
    win: usize,
    t: Option<Target>,
    f: Fetch,
    target_datatype: usize,
) -> Res<Option<ReqObj>> {
    // Nothing to combine (no bytes): nothing to do, whatever the op (as
    // MPICH and Open MPI, which programs rely on: mpi4py's tests).
    let Some(t) = t.filter(|t| t.bytes > 0) else {
        return Ok(None);
    };
    let rt = rt()?;
    let (acc, dtype) = acc_of(f.op, &rt.comm_type(target_datatype)?)?;
    let rty = rt.comm_type(f.result_datatype)?;
    let n = count_arg(f.result_count)?;
    t.matches(rty.bytes(n as i64)?)?;
    let ranges = t.ranges.as_slice();
    let start = |data: &[u8]| -> Res<Option<ReqObj>> {
        t.matches(data.len())?;
        if w.win.is_node_window() {
            // Atomic as a whole, however many ranges the target has.
            with_result(
                f.result,
                f.result_count,
                f.result_datatype,
                t.bytes,
                |out| {
                    Ok(w.win.get_accumulate_scattered_to(
                        t.rank,
                        ranges,
                        data,
                        acc.clone(),
                        dtype,
                        out,
                    )?)
                },
            )?;
            return Ok(None);
        }
        // The reply (the ranges' old bytes in order) lands through the
        // result's datatype.
        let recv = |c: &ferry::Comm, from, tag| {
            Ok(recv_data(f.result, n, &rty).and_then(|target| start_recv(c, target, from, tag)))
        };
        let (req, post) = match ranges {
            [(disp, _)] => {
                w.win
                    .get_accumulate_into(t.rank, *disp, data, acc.clone(), dtype, recv)??
            }
            _ => w.win.get_accumulate_scattered_into(
                t.rank,
                ranges,
                data,
                acc.clone(),
                dtype,
                recv,
            )??,
        };
        Ok(Some(ReqObj::active(req, win, post)))
    };
    // MPI_NO_OP reads only: the origin's buffer may be anything.
    match f.op {
        MPI_NO_OP if t.bytes <= 64 => start(&[0u8; 64][..t.bytes]),
        MPI_NO_OP => start(&vec![0u8; t.bytes]),
        _ => with_origin(f.origin, f.origin_count, f.origin_datatype, start),
    }
}

/// `MPI_Rget_accumulate` (`_c`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn rget_accumulate(
    origin_addr: SendBuf,
    origin_count: impl Into<i64>,
    origin_datatype: usize,
    result_addr: RecvBuf,
    result_count: impl Into<i64>,
    result_datatype: usize,
    target_rank: c_int,
    target_disp: isize,
    target_count: impl Into<i64>,
    target_datatype: usize,
    op: usize,
    win: usize,
    request: Out<'_, usize>,
) -> Res {
    let w = win_of(win)?;
    let t = Target::of(
        &w,
        target_rank,
        target_disp,
        target_count.into(),
        target_datatype,
    )?;
    let f = Fetch {
        origin: origin_addr,
        origin_count: origin_count.into(),
        origin_datatype,
        result: result_addr,
        result_count: result_count.into(),
        result_datatype,
        op,
    };
    let obj = start_fetch(&w, win, t, f, target_datatype)?;
    store(together(obj.into_iter().collect(), win, true), request)
}

/// `MPI_Get_accumulate` (`_c`): kept until a synchronization.
#[allow(clippy::too_many_arguments)]
pub(crate) fn get_accumulate(
    origin_addr: SendBuf,
    origin_count: impl Into<i64>,
    origin_datatype: usize,
    result_addr: RecvBuf,
    result_count: impl Into<i64>,
    result_datatype: usize,
    target_rank: c_int,
    target_disp: isize,
    target_count: impl Into<i64>,
    target_datatype: usize,
    op: usize,
    win: usize,
) -> Res {
    let w = win_of(win)?;
    let t = Target::of(
        &w,
        target_rank,
        target_disp,
        target_count.into(),
        target_datatype,
    )?;
    let f = Fetch {
        origin: origin_addr,
        origin_count: origin_count.into(),
        origin_datatype,
        result: result_addr,
        result_count: result_count.into(),
        result_datatype,
        op,
    };
    if let Some(obj) = start_fetch(&w, win, t, f, target_datatype)? {
        keep(&w, target_rank, vec![obj]);
    }
    Ok(())
}

/// `MPI_Fetch_and_op`: a get-accumulate of one element of `datatype`.
pub(crate) fn fetch_and_op(
    origin_addr: SendBuf,
    result_addr: RecvBuf,
    datatype: usize,
    target_rank: c_int,
    target_disp: isize,
    op: usize,
    win: usize,
) -> Res {
    get_accumulate(
        origin_addr,
        1,
        datatype,
        result_addr,
        1,
        datatype,
        target_rank,
        target_disp,
        1,
        datatype,
        op,
        win,
    )
}

/// `MPI_Compare_and_swap`: one element of a predefined type of 1, 2, 4
/// or 8 bytes, compared bit for bit.
#[allow(clippy::too_many_arguments)]
pub(crate) fn compare_and_swap(
    origin_addr: SendBuf,
    compare_addr: SendBuf,
    result_addr: RecvBuf,
    datatype: usize,
    target_rank: c_int,
    target_disp: isize,
    win: usize,
) -> Res {
    let w = win_of(win)?;
    let Some(t) = Target::of(&w, target_rank, target_disp, 1, datatype)? else {
        return Ok(());
    };
    let rt = rt()?;
    let ty = rt.comm_type(datatype)?;
    let dtype = match (&ty, ty.size()) {
        (TypeRef::Pre(_), 1) => Datatype::U8,
        (TypeRef::Pre(_), 2) => Datatype::U16,
        (TypeRef::Pre(_), 4) => Datatype::U32,
        (TypeRef::Pre(_), 8) => Datatype::U64,
        _ => {
            return Err(Fail::new(
                MPI_ERR_TYPE,
                "compare-and-swap takes a predefined type of 1, 2, 4 or 8 bytes",
            ))
        }
    };
    let (disp, _) = t.single("a compare-and-swap")?;
    // One element of at most 8 bytes (checked above): no allocation.
    let size = ty.size();
    let (mut swap, mut compare) = ([0u8; 8], [0u8; 8]);
    pack_into(origin_addr, 1, &ty, &mut swap)?;
    pack_into(compare_addr, 1, &ty, &mut compare)?;
    let (swap, compare) = (&swap[..size], &compare[..size]);
    if w.win.is_node_window() {
        return with_result(result_addr, 1, datatype, ty.size(), |out| {
            Ok(w.win
                .compare_and_swap_to(t.rank, disp, compare, swap, dtype, out)?)
        });
    }
    let (req, post) =
        w.win
            .compare_and_swap_into(t.rank, disp, compare, swap, dtype, |c, from, tag| {
                Ok(recv_data(result_addr, 1, &ty)
                    .and_then(|target| start_recv(c, target, from, tag)))
            })??;
    keep(&w, target_rank, vec![ReqObj::active(req, win, post)]);
    Ok(())
}
