//! Handles as `int`s (MPI 5.0's `MPI_X_toint` and `MPI_X_fromint`, which
//! the ABI's `MPI_X_c2f` and `MPI_X_f2c` name, `MPI_Fint` being `int`):
//! what a Fortran binding built over the standard ABI, or a profiling
//! tool, uses to keep a handle in an integer.
//!
//! A predefined handle's int is its value. A user object's is its table
//! slot + 1, negated ([`crate::handle::to_int`]); converting back gives
//! the handle of what lives in that slot now, or a stale one. A direct
//! request handle (`request/handle.rs`) is `-(2^30 + engine index)`, its
//! generation kept here until the next conversion of that index. What is
//! none of these converts to `MPI_UNDEFINED`. Files have no
//! objects here yet: only their null handles convert.

use std::ffi::c_int;
use std::sync::Mutex;

use crate::abi::MPI_UNDEFINED;
use crate::handle::{to_int, Kind, Table, PREDEFINED_LIMIT};
use crate::request::handle::{direct_from_parts, direct_parts};
use crate::state::{lock, rt, Runtime};

/// The int of `h` as a handle of `kind`.
fn int_of(kind: Kind, h: usize) -> c_int {
    to_int(kind, h).unwrap_or(MPI_UNDEFINED)
}

/// The handle an int names in `table` (predefined values as they are).
fn handle_in<T>(table: &Table<T>, i: c_int) -> usize {
    table.from_int(i)
}

/// A handle from an int of a kind whose table lives in the runtime (a
/// predefined value as it is, also before `MPI_Init`).
fn from_runtime(i: c_int, look: impl FnOnce(&Runtime) -> Option<usize>) -> usize {
    if i >= 0 {
        return i as usize;
    }
    rt().ok().and_then(look).unwrap_or(0)
}

/// `MPI_Comm_toint`.
pub(crate) fn comm_toint(comm: usize) -> c_int {
    int_of(Kind::Comm, comm)
}

/// `MPI_Comm_fromint`.
pub(crate) fn comm_fromint(comm: c_int) -> usize {
    from_runtime(comm, |rt| rt.comms.with(|t| handle_in(t, comm)).ok())
}

/// `MPI_Type_toint`.
pub(crate) fn type_toint(datatype: usize) -> c_int {
    int_of(Kind::Datatype, datatype)
}

/// `MPI_Type_fromint`.
pub(crate) fn type_fromint(datatype: c_int) -> usize {
    from_runtime(datatype, |rt| {
        rt.types().with(|t| handle_in(t, datatype)).ok()
    })
}

/// `MPI_Group_toint`.
pub(crate) fn group_toint(group: usize) -> c_int {
    int_of(Kind::Group, group)
}

/// `MPI_Group_fromint`.
pub(crate) fn group_fromint(group: c_int) -> usize {
    from_runtime(group, |rt| rt.groups.with(|t| handle_in(t, group)).ok())
}

/// `MPI_Op_toint`.
pub(crate) fn op_toint(op: usize) -> c_int {
    int_of(Kind::Op, op)
}

/// `MPI_Op_fromint`.
pub(crate) fn op_fromint(op: c_int) -> usize {
    from_runtime(op, |rt| rt.ops().with(|t| handle_in(t, op)).ok())
}

/// `MPI_Message_toint`.
pub(crate) fn message_toint(message: usize) -> c_int {
    int_of(Kind::Message, message)
}

/// `MPI_Message_fromint`.
pub(crate) fn message_fromint(message: c_int) -> usize {
    from_runtime(message, |rt| {
        rt.messages().with(|t| handle_in(t, message)).ok()
    })
}

/// `MPI_Errhandler_toint`.
pub(crate) fn errhandler_toint(errhandler: usize) -> c_int {
    int_of(Kind::Errhandler, errhandler)
}

/// `MPI_Errhandler_fromint` (handlers live without the runtime too).
pub(crate) fn errhandler_fromint(errhandler: c_int) -> usize {
    handle_in(&lock(&crate::errhandler::ERRHANDLERS), errhandler)
}

/// `MPI_Info_toint`.
pub(crate) fn info_toint(info: usize) -> c_int {
    int_of(Kind::Info, info)
}

/// `MPI_Info_fromint` (info objects live without the runtime too).
pub(crate) fn info_fromint(info: c_int) -> usize {
    handle_in(&lock(&crate::info::INFOS), info)
}

/// The generation of each direct request's engine index, as last
/// converted (see the module docs).
static DIRECT_GENERATIONS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// The int of a direct request: below `-(2^30)`.
const DIRECT_BASE: i64 = 1 << 30;

/// `MPI_Request_toint`.
pub(crate) fn request_toint(request: usize) -> c_int {
    if let Some((index, generation)) = direct_parts(request) {
        let mut gens = lock(&DIRECT_GENERATIONS);
        let i = index as usize;
        if gens.len() <= i {
            gens.resize(i + 1, 0);
        }
        gens[i] = generation;
        return (-(DIRECT_BASE + i64::from(index))) as c_int;
    }
    int_of(Kind::Request, request)
}

/// `MPI_Request_fromint`.
pub(crate) fn request_fromint(request: c_int) -> usize {
    let i = i64::from(request);
    if i <= -DIRECT_BASE {
        let index = (-i - DIRECT_BASE) as u32;
        let generation = lock(&DIRECT_GENERATIONS)
            .get(index as usize)
            .copied()
            .unwrap_or(0);
        return direct_from_parts(index, generation);
    }
    from_runtime(request, |rt| {
        rt.requests().with(|t| handle_in(t, request)).ok()
    })
}

/// The int of a handle of a kind with no objects here (windows, files):
/// only predefined values convert.
fn objectless_toint(h: usize) -> c_int {
    if h < PREDEFINED_LIMIT {
        h as c_int
    } else {
        MPI_UNDEFINED
    }
}

/// `MPI_Win_toint`.
pub(crate) fn win_toint(win: usize) -> c_int {
    int_of(Kind::Win, win)
}

/// `MPI_Win_fromint` (windows live in their chapter's table).
pub(crate) fn win_fromint(win: c_int) -> usize {
    crate::rma::from_int(win)
}

/// `MPI_File_toint`.
pub(crate) fn file_toint(file: usize) -> c_int {
    objectless_toint(file)
}

/// `MPI_File_fromint`.
pub(crate) fn file_fromint(file: c_int) -> usize {
    usize::try_from(file).unwrap_or(crate::abi::MPI_FILE_NULL)
}

/// `MPI_Session_toint`.
pub(crate) fn session_toint(session: usize) -> c_int {
    int_of(Kind::Session, session)
}

/// `MPI_Session_fromint` (sessions live without the runtime's tables).
pub(crate) fn session_fromint(session: c_int) -> usize {
    crate::session::from_int(session)
}
