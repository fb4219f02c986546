//! Sessions (MPI 4.0, MPI 4.1 §11.3): `MPI_Session_init` starts the
//! runtime if neither `MPI_Init` nor another session did (and the last
//! session's end ends it, unless the world model is active), so a library
//! can use MPI before, without and beside `MPI_Init`. A session names the
//! process sets ferry knows (`ferry::psets`: `mpi://WORLD`, `mpi://SELF`
//! and `mpi://shared`, the node's processes); `MPI_Group_from_session_pset`
//! gives a set's group, and `MPI_Comm_create_from_group` a communicator
//! over it (`comm::fromgroups`). Errors in a session's calls go to its
//! error handler.
//!
//! ferry starts once per process: after the runtime ended (the last
//! session finalized with no world model active, or `MPI_Finalize` with
//! no session), a new session fails with `MPI_ERR_OTHER`.

use std::ffi::c_int;
use std::sync::Mutex;

use ferry::psets::PSETS;

use crate::abi::callback::SessionErrhFn;
use crate::abi::class::*;
use crate::abi::*;
use crate::env::errors::errh_of;
use crate::errhandler::Errh;
use crate::error::{Fail, Res};
use crate::ffi::args::{Out, TextOut};
use crate::handle::{Kind, Table};
use crate::info::Info;
use crate::state::{self, lock, rt};

/// A session: its error handler and the info it was started with.
#[derive(Debug)]
pub(crate) struct SessionObj {
    errh: Errh,
    info: Info,
}

/// The live sessions (process-wide: a session can exist before the
/// runtime's tables do).
static SESSIONS: Mutex<Table<SessionObj>> = Mutex::new(Table::new(Kind::Session));

/// The `MPI_THREAD_*` names an info's `thread_level` takes.
const LEVELS: [(&str, c_int); 4] = [
    ("MPI_THREAD_SINGLE", MPI_THREAD_SINGLE),
    ("MPI_THREAD_FUNNELED", MPI_THREAD_FUNNELED),
    ("MPI_THREAD_SERIALIZED", MPI_THREAD_SERIALIZED),
    ("MPI_THREAD_MULTIPLE", MPI_THREAD_MULTIPLE),
];

fn bad_session() -> impl Fn(crate::handle::BadHandle) -> Fail {
    |b| Fail::handle(MPI_ERR_SESSION, b, "session")
}

/// Runs `f` on session `h`, or fails with `MPI_ERR_SESSION`.
fn with<T>(h: usize, f: impl FnOnce(&mut SessionObj) -> T) -> Res<T> {
    let mut t = lock(&SESSIONS);
    t.get_mut(h).map(f).map_err(bad_session())
}

/// The error handler of session `h`, if `h` is one (for raising).
pub(crate) fn errh_of_session(h: usize) -> Option<Errh> {
    lock(&SESSIONS).get(h).ok().map(|s| s.errh.clone())
}

/// `MPI_Session_init`: the info's `thread_level` (an `MPI_THREAD_*` name)
/// sets the runtime's level if this session starts it.
pub(crate) fn session_init(info: usize, errhandler: usize, mut session: Out<'_, usize>) -> Res {
    let errh = errh_of(errhandler)?;
    let given = if info == MPI_INFO_NULL {
        Info::default()
    } else {
        crate::info::calls::read(info)?
    };
    let level = match given.get("thread_level") {
        Some(name) => Some(
            LEVELS
                .iter()
                .find(|l| l.0.eq_ignore_ascii_case(name.trim()))
                .map(|l| l.1)
                .ok_or_else(|| {
                    Fail::msg(
                        MPI_ERR_ARG,
                        format!("thread_level {name:?} is no MPI_THREAD_* name"),
                    )
                })?,
        ),
        None => None,
    };
    state::start_session(level)?;
    let h = lock(&SESSIONS).insert(SessionObj { errh, info: given });
    match h {
        Some(h) => session.set(h),
        None => {
            state::end_session()?;
            Err(Fail::new(MPI_ERR_INTERN, "too many sessions"))
        }
    }
}

/// `MPI_Session_finalize`: the handle becomes `MPI_SESSION_NULL`.
pub(crate) fn session_finalize(mut session: Out<'_, usize>) -> Res {
    let h = session.get()?;
    lock(&SESSIONS)
        .remove(h)
        .map_err(|b| Fail::handle(MPI_ERR_SESSION, b, "session").on(h))?;
    session.set(MPI_SESSION_NULL)?;
    state::end_session()
}

/// `MPI_Session_get_num_psets`.
pub(crate) fn session_get_num_psets(
    session: usize,
    _info: usize,
    mut npset_names: Out<'_, c_int>,
) -> Res {
    with(session, |_| ())?;
    npset_names.set(PSETS.len() as c_int)
}

/// `MPI_Session_get_nth_pset`: with `*pset_len` 0, the name's length plus
/// one (its NUL) in `*pset_len`; else the name, cut to `*pset_len - 1`
/// characters.
pub(crate) fn session_get_nth_pset(
    session: usize,
    _info: usize,
    n: c_int,
    mut pset_len: Out<'_, c_int>,
    mut pset_name: TextOut<'_>,
) -> Res {
    with(session, |_| ())?;
    let name = usize::try_from(n)
        .ok()
        .and_then(|i| PSETS.get(i))
        .ok_or_else(|| Fail::msg(MPI_ERR_ARG, format!("process set {n} of {}", PSETS.len())))?;
    if pset_len.get()? > 0 {
        pset_name.set(name, None)?;
    }
    pset_len.set(name.len() as c_int + 1)
}

/// The group of process set `name` of session `session`.
fn pset_group(session: usize, name: &str) -> Res<ferry::Group> {
    with(session, |_| ())?;
    let world = rt()?.world_comm.comm.world();
    world
        .pset_group(name)
        .map_err(|_| Fail::msg(MPI_ERR_ARG, format!("no process set {name:?}")))
}

/// `MPI_Session_get_pset_info`: `mpi_size`, the set's size.
pub(crate) fn session_get_pset_info(
    session: usize,
    pset_name: &str,
    mut info: Out<'_, usize>,
) -> Res {
    let g = pset_group(session, pset_name)?;
    let mut i = Info::default();
    i.set("mpi_size", &g.size().to_string())?;
    info.set(crate::info::calls::insert(i)?)
}

/// `MPI_Session_get_info`: the info the session started with, and the
/// thread level in force.
pub(crate) fn session_get_info(session: usize, mut info_used: Out<'_, usize>) -> Res {
    let mut i = with(session, |s| s.info.clone())?;
    let level = state::level_value(rt()?.level);
    let name = LEVELS
        .iter()
        .find(|l| l.1 == level)
        .map_or("MPI_THREAD_SINGLE", |l| l.0);
    i.set("thread_level", name)?;
    info_used.set(crate::info::calls::insert(i)?)
}

/// `MPI_Group_from_session_pset`.
pub(crate) fn group_from_session_pset(
    session: usize,
    pset_name: &str,
    mut newgroup: Out<'_, usize>,
) -> Res {
    let g = pset_group(session, pset_name)?;
    crate::comm::group::store(rt()?, g, &mut newgroup)
}

/// `MPI_Session_create_errhandler` (a session's handler has the shape
/// of a communicator's).
pub(crate) fn session_create_errhandler(
    function: Option<SessionErrhFn>,
    errhandler: Out<'_, usize>,
) -> Res {
    crate::env::errors::comm_create_errhandler(function, errhandler)
}

/// `MPI_Session_set_errhandler`.
pub(crate) fn session_set_errhandler(session: usize, errhandler: usize) -> Res {
    let errh = errh_of(errhandler)?;
    with(session, |s| s.errh = errh)
}

/// `MPI_Session_get_errhandler`: a predefined handle, or a new handle to
/// the same user handler.
pub(crate) fn session_get_errhandler(session: usize, mut errhandler: Out<'_, usize>) -> Res {
    let errh = with(session, |s| s.errh.clone())?;
    errhandler.set(crate::env::errors::handle_of(errh)?)
}

/// Checks `h` names a live session (`MPI_Session_call_errhandler`).
pub(crate) fn check(h: usize) -> Res {
    with(h, |_| ()).map_err(|f| f.on(h))
}

/// The session handle an int names (`MPI_Session_fromint`).
pub(crate) fn from_int(i: c_int) -> usize {
    lock(&SESSIONS).from_int(i)
}
