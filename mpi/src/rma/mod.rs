//! One-sided communication (MPI 4.1 chapter 12) over ferry's windows
//! (`ferry::rma::Window<u8>`): every operation is a request the target's
//! engine applies when it progresses (`ferry_core::rma`), so it works on
//! every device and for every datatype on the origin side.
//!
//! - `create`: `MPI_Win_allocate`, `MPI_Win_create` (and `_c`),
//!   `MPI_Win_free`.
//! - `ops`: `MPI_Put`, `MPI_Get`, `MPI_Accumulate`, `MPI_Get_accumulate`,
//!   `MPI_Fetch_and_op`, `MPI_Compare_and_swap`, their `R` forms and `_c`
//!   forms.
//! - `sync`: fences, locks, flushes, post/start/complete/wait/test.
//! - `query`: attributes, name, group, info, error handlers.
//!
//! The origin's data is packed into the request (any datatype); the
//! target side is cut into its datatype's contiguous blocks, one request
//! each. A get lands where the program asked (unpacked on completion for
//! a non-contiguous origin). Operations without a request (`MPI_Get`,
//! ...) are kept by their window until the synchronization that completes
//! them.

pub(crate) mod create;
pub(crate) mod ops;
pub(crate) mod query;
pub(crate) mod sync;

use std::ffi::c_int;
use std::sync::{Arc, Mutex};

use ferry::rma::Window;

use crate::abi::class::*;
use crate::errhandler::Errh;
use crate::error::{Fail, Res};
use crate::handle::{Kind, Table};
use crate::info::Info;
use crate::request::object::ReqObj;
use crate::state::lock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A window: ferry's, and what MPI asks of it besides.
#[derive(Debug)]
pub(crate) struct WinObj {
    pub(crate) win: Window<u8>,
    /// The window's group (its communicator's).
    pub(crate) group: ferry::Group,
    /// What `MPI_Win_get_attr` hands out addresses of.
    pub(crate) attrs: Box<Predefined>,
    /// Every member's displacement unit, by rank.
    pub(crate) disp_units: Vec<i64>,
    pub(crate) meta: Mutex<Meta>,
    /// Operations without a request of their own, by target rank: the
    /// next synchronization that covers their target completes them.
    pub(crate) pending: Mutex<Vec<(c_int, ReqObj)>>,
    /// How many `pending` holds, read without its lock: a synchronization
    /// with nothing kept (every operation on a node window) takes none.
    pub(crate) kept: AtomicUsize,
}

/// The values of the predefined attributes (their addresses are what
/// `MPI_Win_get_attr` returns, so they stay put in a box).
#[derive(Debug)]
pub(crate) struct Predefined {
    pub(crate) base: usize,
    pub(crate) size: isize,
    pub(crate) disp_unit: c_int,
    pub(crate) flavor: c_int,
    pub(crate) model: c_int,
}

/// What can change on a window.
#[derive(Debug)]
pub(crate) struct Meta {
    pub(crate) name: String,
    pub(crate) errh: Errh,
    pub(crate) info: Info,
}

/// The live windows.
static WINS: Mutex<Table<Arc<WinObj>>> = Mutex::new(Table::new(Kind::Win));

fn bad_win() -> impl Fn(crate::handle::BadHandle) -> Fail {
    |b| Fail::handle(MPI_ERR_WIN, b, "window")
}

/// The window `h` names.
///
/// # Errors
/// `MPI_ERR_WIN` for anything else.
pub(crate) fn win_of(h: usize) -> Res<Arc<WinObj>> {
    if h == crate::abi::MPI_WIN_NULL {
        return Err(Fail::new(MPI_ERR_WIN, "MPI_WIN_NULL passed as a window"));
    }
    lock(&WINS).get(h).cloned().map_err(bad_win())
}

/// The error handler of window `h`, if `h` is one (for raising).
pub(crate) fn errh_of_window(h: usize) -> Option<Errh> {
    lock(&WINS).get(h).ok().map(|w| lock(&w.meta).errh.clone())
}

/// The handle an int names (`MPI_Win_fromint`).
pub(crate) fn from_int(i: c_int) -> usize {
    lock(&WINS).from_int(i)
}

/// Stores a new window; its handle.
fn insert(w: WinObj) -> Res<usize> {
    lock(&WINS)
        .insert(Arc::new(w))
        .ok_or_else(|| Fail::new(MPI_ERR_INTERN, "too many windows"))
}

/// Removes window `h` from the table.
fn remove(h: usize) -> Res<Arc<WinObj>> {
    lock(&WINS).remove(h).map_err(bad_win())
}

impl WinObj {
    /// Completes the operations kept for `target` (all with `None`).
    ///
    /// # Errors
    /// The first that failed (the others are completed all the same).
    pub(crate) fn settle(&self, target: Option<c_int>) -> Res {
        let mine: Vec<(c_int, ReqObj)> = {
            // The common case (a node window keeps nothing): no lock.
            if self.kept.load(Ordering::Acquire) == 0 {
                return Ok(());
            }
            let mut p = lock(&self.pending);
            let (take, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut *p)
                .into_iter()
                .partition(|(t, _)| target.is_none_or(|want| *t == want));
            self.kept.fetch_sub(take.len(), Ordering::AcqRel);
            *p = keep;
            take
        };
        let mut first = Ok(());
        for (_, mut obj) in mine {
            let done = obj.wait().and_then(|r| r.result).map_err(ops::refused);
            if first.is_ok() {
                first = done;
            }
        }
        first
    }
}
