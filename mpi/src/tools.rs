//! The tools interface (MPI 4.1 chapter 15, `MPI_T_*`): ferry's settings
//! as control variables and its counters as performance variables
//! (`ferry::tools`), in two categories, so that a tool can list and read
//! them, before, during and after `MPI_Init`.
//!
//! - Control variables are the `FERRY_*` variables in force: read when
//!   the world starts, so they are `MPI_T_SCOPE_READONLY` and a write
//!   fails with `MPI_T_ERR_CVAR_SET_NEVER`. A number is an
//!   `MPI_UNSIGNED_LONG_LONG`, a flag an `MPI_INT`, a name `TEXT_LEN`
//!   `MPI_CHAR`s (NUL-terminated). Before the runtime starts they show what
//!   the environment would set.
//! - Performance variables are the counters, `MPI_UNSIGNED_LONG_LONG`,
//!   continuous (always counting: no start or stop) and read-only (no
//!   write or reset); a tool reads them and takes differences. Before the
//!   runtime starts they read 0.
//! - ferry raises no events and has no event sources: the counts are 0,
//!   and every index is out of range.
//!
//! Every function returns its error class (`MPI_T_ERR_*`) and never calls
//! an error handler, as the standard says. Handles are small integers:
//! a control variable's index + 1, a performance variable's index + 2
//! (1 is `MPI_T_PVAR_ALL_HANDLES`), a session's slot + 1.

use std::ffi::c_int;
use std::sync::Mutex;

use ferry::tools::{CounterClass, Setting, Value, COUNTERS};

use crate::abi::class::*;
use crate::abi::*;
use crate::error::{Fail, Res};
use crate::ffi::args::{Out, OutSlice, RecvBuf, SendBuf, TextOut};
use crate::state::{lock, rt_any};

// The ABI's values this chapter hands out (mpi.h).
const MPI_INT: usize = 0x209;
const MPI_UNSIGNED_LONG_LONG: usize = 0x20f;
const MPI_CHAR: usize = 0x243;
const MPI_T_VERBOSITY_USER_BASIC: c_int = 0x09;
const MPI_T_BIND_NO_OBJECT: c_int = 1;
const MPI_T_SCOPE_READONLY: c_int = 2;
const MPI_T_PVAR_CLASS_LEVEL: c_int = 2;
const MPI_T_PVAR_CLASS_COUNTER: c_int = 7;

/// How many `MPI_T_init_thread` calls have no `MPI_T_finalize` yet.
static INITS: Mutex<u32> = Mutex::new(0);
/// Performance variable sessions: live or freed, by slot.
static SESSIONS: Mutex<Vec<bool>> = Mutex::new(Vec::new());

/// A name's elements (`MPI_CHAR`) in a control variable.
const TEXT_LEN: usize = 256;
/// The categories: the settings, then the counters.
const CATEGORIES: [(&str, &str); 2] = [
    ("ferry_settings", "the FERRY_* variables in force"),
    ("ferry_counters", "the engine's and the waiters' counters"),
];

type TRes = Result<(), c_int>;

/// The body's result: an `MPI_T_ERR_*` class, returned as it is (the
/// shims are `quiet`: no error handler runs).
fn code(r: TRes) -> Res {
    r.map_err(|class| Fail::new(class, "the tools interface refused the call"))
}

fn ready() -> TRes {
    if *lock(&INITS) == 0 {
        return Err(MPI_T_ERR_NOT_INITIALIZED);
    }
    Ok(())
}

/// Sets `o` unless the program passed NULL (allowed for every query's
/// outputs).
fn put<T: Copy>(o: &mut Out<'_, T>, v: T) -> TRes {
    if o.is_null() {
        return Ok(());
    }
    o.set(v).map_err(|_| MPI_T_ERR_INVALID)
}

/// A string and its length, the MPI_T way: with `*len` 0 or a NULL
/// buffer only the length (with its NUL) goes out; else the string cut
/// to the buffer, and the length written (with its NUL).
fn put_text(s: &str, text: &mut TextOut<'_>, len: &mut Out<'_, c_int>) -> TRes {
    let cap = if len.is_null() {
        0
    } else {
        len.get().map_err(|_| MPI_T_ERR_INVALID)?
    };
    let n = if cap > 0 && !text.is_empty() {
        text.set(s, None).map_err(|_| MPI_T_ERR_INVALID)?;
        s.len().min(cap as usize - 1)
    } else {
        s.len()
    };
    put(len, c_int::try_from(n + 1).unwrap_or(c_int::MAX))
}

/// The settings in force (or, before the runtime starts, the ones the
/// environment would set).
fn settings() -> Vec<Setting> {
    match rt_any() {
        Some(rt) => rt.world_comm.comm.world().config().settings(),
        None => ferry::Config::from_env()
            .map(|c| c.settings())
            .unwrap_or_default(),
    }
}

/// The counters now (zero before the runtime starts).
fn counters() -> ferry::Counters {
    rt_any()
        .map(|rt| rt.world_comm.comm.world().counters())
        .unwrap_or_default()
}

fn index(i: c_int, n: usize) -> Result<usize, c_int> {
    usize::try_from(i)
        .ok()
        .filter(|&i| i < n)
        .ok_or(MPI_T_ERR_INVALID_INDEX)
}

/// The datatype and element count of a setting.
fn shape(v: &Value) -> (usize, c_int) {
    match v {
        Value::Number(_) => (MPI_UNSIGNED_LONG_LONG, 1),
        Value::Flag(_) => (MPI_INT, 1),
        Value::Text(_) => (MPI_CHAR, TEXT_LEN as c_int),
    }
}

/// `MPI_T_init_thread`: the level asked for is the one provided (the
/// tools interface takes its own lock).
pub(crate) fn t_init_thread(required: c_int, mut provided: Out<'_, c_int>) -> Res {
    *lock(&INITS) += 1;
    code(put(
        &mut provided,
        required.clamp(MPI_THREAD_SINGLE, MPI_THREAD_MULTIPLE),
    ))
}

/// `MPI_T_finalize`.
pub(crate) fn t_finalize() -> Res {
    let mut n = lock(&INITS);
    if *n == 0 {
        return code(Err(MPI_T_ERR_NOT_INITIALIZED));
    }
    *n -= 1;
    Ok(())
}

/// `MPI_T_cvar_get_num`.
pub(crate) fn t_cvar_get_num(mut num: Out<'_, c_int>) -> Res {
    code(ready().and_then(|()| put(&mut num, settings().len() as c_int)))
}

/// `MPI_T_cvar_get_info`.
pub(crate) fn t_cvar_get_info(
    cvar_index: c_int,
    mut name: TextOut<'_>,
    mut name_len: Out<'_, c_int>,
    mut verbosity: Out<'_, c_int>,
    mut datatype: Out<'_, usize>,
    mut enumtype: Out<'_, usize>,
    mut desc: TextOut<'_>,
    mut desc_len: Out<'_, c_int>,
    mut bind: Out<'_, c_int>,
    mut scope: Out<'_, c_int>,
) -> Res {
    code((|| {
        ready()?;
        let all = settings();
        let s = &all[index(cvar_index, all.len())?];
        put_text(s.name, &mut name, &mut name_len)?;
        put(&mut verbosity, MPI_T_VERBOSITY_USER_BASIC)?;
        put(&mut datatype, shape(&s.value).0)?;
        put(&mut enumtype, 0)?;
        put_text(s.desc, &mut desc, &mut desc_len)?;
        put(&mut bind, MPI_T_BIND_NO_OBJECT)?;
        put(&mut scope, MPI_T_SCOPE_READONLY)
    })())
}

/// `MPI_T_cvar_get_index`.
pub(crate) fn t_cvar_get_index(name: &str, mut cvar_index: Out<'_, c_int>) -> Res {
    code((|| {
        ready()?;
        let i = settings()
            .iter()
            .position(|s| s.name == name)
            .ok_or(MPI_T_ERR_INVALID_NAME)?;
        put(&mut cvar_index, i as c_int)
    })())
}

/// `MPI_T_cvar_handle_alloc`: the handle is the index + 1; no object is
/// bound.
pub(crate) fn t_cvar_handle_alloc(
    cvar_index: c_int,
    _obj_handle: usize,
    mut handle: Out<'_, usize>,
    mut count: Out<'_, c_int>,
) -> Res {
    code((|| {
        ready()?;
        let all = settings();
        let i = index(cvar_index, all.len())?;
        put(&mut count, shape(&all[i].value).1)?;
        handle.set(i + 1).map_err(|_| MPI_T_ERR_INVALID)
    })())
}

/// The index of the setting control-variable handle `h` names (index + 1)
/// among `n`.
fn cvar_of(h: usize, n: usize) -> Result<usize, c_int> {
    h.checked_sub(1)
        .filter(|&i| i < n)
        .ok_or(MPI_T_ERR_INVALID_HANDLE)
}

/// `MPI_T_cvar_handle_free`.
pub(crate) fn t_cvar_handle_free(mut handle: Out<'_, usize>) -> Res {
    code((|| {
        ready()?;
        let h = handle.get().map_err(|_| MPI_T_ERR_INVALID_HANDLE)?;
        cvar_of(h, settings().len())?;
        handle.set(0).map_err(|_| MPI_T_ERR_INVALID)
    })())
}

/// `MPI_T_cvar_read`.
pub(crate) fn t_cvar_read(handle: usize, buf: RecvBuf) -> Res {
    code((|| {
        ready()?;
        let all = settings();
        let i = cvar_of(handle, all.len())?;
        let bytes: Vec<u8> = match &all[i].value {
            Value::Number(n) => n.to_ne_bytes().to_vec(),
            Value::Flag(f) => c_int::from(*f).to_ne_bytes().to_vec(),
            Value::Text(t) => {
                let mut v = vec![0u8; TEXT_LEN];
                let n = t.len().min(TEXT_LEN - 1);
                v[..n].copy_from_slice(&t.as_bytes()[..n]);
                v
            }
        };
        let out =
            crate::datatype::buf::bytes_mut(buf, bytes.len()).map_err(|_| MPI_T_ERR_INVALID)?;
        out.copy_from_slice(&bytes);
        Ok(())
    })())
}

/// `MPI_T_cvar_write`: settings are read once, at start.
pub(crate) fn t_cvar_write(handle: usize, _buf: SendBuf) -> Res {
    code((|| {
        ready()?;
        cvar_of(handle, settings().len())?;
        Err(MPI_T_ERR_CVAR_SET_NEVER)
    })())
}

/// `MPI_T_pvar_get_num`.
pub(crate) fn t_pvar_get_num(mut num: Out<'_, c_int>) -> Res {
    code(ready().and_then(|()| put(&mut num, COUNTERS.len() as c_int)))
}

fn class_of(c: CounterClass) -> c_int {
    match c {
        CounterClass::Counter => MPI_T_PVAR_CLASS_COUNTER,
        CounterClass::Level => MPI_T_PVAR_CLASS_LEVEL,
    }
}

/// `MPI_T_pvar_get_info`.
pub(crate) fn t_pvar_get_info(
    pvar_index: c_int,
    mut name: TextOut<'_>,
    mut name_len: Out<'_, c_int>,
    mut verbosity: Out<'_, c_int>,
    mut var_class: Out<'_, c_int>,
    mut datatype: Out<'_, usize>,
    mut enumtype: Out<'_, usize>,
    mut desc: TextOut<'_>,
    mut desc_len: Out<'_, c_int>,
    mut bind: Out<'_, c_int>,
    mut readonly: Out<'_, c_int>,
    mut continuous: Out<'_, c_int>,
    mut atomic: Out<'_, c_int>,
) -> Res {
    code((|| {
        ready()?;
        let v = &COUNTERS[index(pvar_index, COUNTERS.len())?];
        put_text(v.name, &mut name, &mut name_len)?;
        put(&mut verbosity, MPI_T_VERBOSITY_USER_BASIC)?;
        put(&mut var_class, class_of(v.class))?;
        put(&mut datatype, MPI_UNSIGNED_LONG_LONG)?;
        put(&mut enumtype, 0)?;
        put_text(v.desc, &mut desc, &mut desc_len)?;
        put(&mut bind, MPI_T_BIND_NO_OBJECT)?;
        put(&mut readonly, 1)?;
        put(&mut continuous, 1)?;
        put(&mut atomic, 0)
    })())
}

/// `MPI_T_pvar_get_index`.
pub(crate) fn t_pvar_get_index(
    name: &str,
    var_class: c_int,
    mut pvar_index: Out<'_, c_int>,
) -> Res {
    code((|| {
        ready()?;
        let i = COUNTERS
            .iter()
            .position(|v| v.name == name && class_of(v.class) == var_class)
            .ok_or(MPI_T_ERR_INVALID_NAME)?;
        put(&mut pvar_index, i as c_int)
    })())
}

/// `MPI_T_pvar_session_create`.
pub(crate) fn t_pvar_session_create(mut session: Out<'_, usize>) -> Res {
    code((|| {
        ready()?;
        let mut s = lock(&SESSIONS);
        let slot = match s.iter().position(|live| !live) {
            Some(i) => i,
            None => {
                s.push(false);
                s.len() - 1
            }
        };
        s[slot] = true;
        session.set(slot + 1).map_err(|_| MPI_T_ERR_INVALID)
    })())
}

fn live_session(session: usize) -> TRes {
    let ok = session
        .checked_sub(1)
        .and_then(|i| lock(&SESSIONS).get(i).copied())
        .unwrap_or(false);
    if ok {
        Ok(())
    } else {
        Err(MPI_T_ERR_INVALID_SESSION)
    }
}

/// `MPI_T_pvar_session_free`.
pub(crate) fn t_pvar_session_free(mut session: Out<'_, usize>) -> Res {
    code((|| {
        ready()?;
        let h = session.get().map_err(|_| MPI_T_ERR_INVALID)?;
        live_session(h)?;
        lock(&SESSIONS)[h - 1] = false;
        session.set(0).map_err(|_| MPI_T_ERR_INVALID)
    })())
}

/// `MPI_T_PVAR_ALL_HANDLES`.
const ALL_HANDLES: usize = 1;

/// The counter a handle names (its index + 2).
fn counter(session: usize, handle: usize) -> Result<&'static ferry::tools::CounterVar, c_int> {
    ready()?;
    live_session(session)?;
    handle
        .checked_sub(2)
        .and_then(|i| COUNTERS.get(i))
        .ok_or(MPI_T_ERR_INVALID_HANDLE)
}

/// `MPI_T_pvar_handle_alloc`.
pub(crate) fn t_pvar_handle_alloc(
    session: usize,
    pvar_index: c_int,
    _obj_handle: usize,
    mut handle: Out<'_, usize>,
    mut count: Out<'_, c_int>,
) -> Res {
    code((|| {
        ready()?;
        live_session(session)?;
        let i = index(pvar_index, COUNTERS.len())?;
        put(&mut count, 1)?;
        handle.set(i + 2).map_err(|_| MPI_T_ERR_INVALID)
    })())
}

/// `MPI_T_pvar_handle_free`.
pub(crate) fn t_pvar_handle_free(session: usize, mut handle: Out<'_, usize>) -> Res {
    code((|| {
        let h = handle.get().map_err(|_| MPI_T_ERR_INVALID)?;
        counter(session, h)?;
        handle.set(0).map_err(|_| MPI_T_ERR_INVALID)
    })())
}

/// `MPI_T_pvar_start` and `_stop`: every counter is continuous, so
/// `MPI_T_PVAR_ALL_HANDLES` (which names the others) has nothing to do.
pub(crate) fn t_pvar_start(session: usize, handle: usize) -> Res {
    code((|| {
        if handle == ALL_HANDLES {
            return ready().and_then(|()| live_session(session));
        }
        counter(session, handle)?;
        Err(MPI_T_ERR_PVAR_NO_STARTSTOP)
    })())
}

/// `MPI_T_pvar_stop`.
pub(crate) fn t_pvar_stop(session: usize, handle: usize) -> Res {
    t_pvar_start(session, handle)
}

/// `MPI_T_pvar_read`: one `unsigned long long`.
pub(crate) fn t_pvar_read(session: usize, handle: usize, buf: RecvBuf) -> Res {
    code((|| {
        let v = counter(session, handle)?;
        let out = crate::datatype::buf::bytes_mut(buf, 8).map_err(|_| MPI_T_ERR_INVALID)?;
        out.copy_from_slice(&v.read(&counters()).to_ne_bytes());
        Ok(())
    })())
}

/// `MPI_T_pvar_write`: the counters are read-only.
pub(crate) fn t_pvar_write(session: usize, handle: usize, _buf: SendBuf) -> Res {
    code(counter(session, handle).and(Err(MPI_T_ERR_PVAR_NO_WRITE)))
}

/// `MPI_T_pvar_reset`: read-only counters cannot be reset.
pub(crate) fn t_pvar_reset(session: usize, handle: usize) -> Res {
    code((|| {
        if handle == ALL_HANDLES {
            return ready().and_then(|()| live_session(session));
        }
        counter(session, handle)?;
        Err(MPI_T_ERR_PVAR_NO_WRITE)
    })())
}

/// `MPI_T_pvar_readreset`.
pub(crate) fn t_pvar_readreset(session: usize, handle: usize, _buf: RecvBuf) -> Res {
    code(counter(session, handle).and(Err(MPI_T_ERR_PVAR_NO_ATOMIC)))
}

/// `MPI_T_enum_get_info`: ferry's variables use no enumeration.
pub(crate) fn t_enum_get_info(
    _enumtype: usize,
    _num: Out<'_, c_int>,
    _name: TextOut<'_>,
    _name_len: Out<'_, c_int>,
) -> Res {
    code(ready().and(Err(MPI_T_ERR_INVALID_HANDLE)))
}

/// `MPI_T_enum_get_item`.
pub(crate) fn t_enum_get_item(
    _enumtype: usize,
    _indx: c_int,
    _value: Out<'_, c_int>,
    _name: TextOut<'_>,
    _name_len: Out<'_, c_int>,
) -> Res {
    code(ready().and(Err(MPI_T_ERR_INVALID_HANDLE)))
}

/// `MPI_T_category_get_num`.
pub(crate) fn t_category_get_num(mut num_cat: Out<'_, c_int>) -> Res {
    code(ready().and_then(|()| put(&mut num_cat, CATEGORIES.len() as c_int)))
}

/// How many control and performance variables category `i` holds.
fn members(i: usize) -> (usize, usize) {
    match i {
        0 => (settings().len(), 0),
        _ => (0, COUNTERS.len()),
    }
}

/// `MPI_T_category_get_info`.
pub(crate) fn t_category_get_info(
    cat_index: c_int,
    mut name: TextOut<'_>,
    mut name_len: Out<'_, c_int>,
    mut desc: TextOut<'_>,
    mut desc_len: Out<'_, c_int>,
    mut num_cvars: Out<'_, c_int>,
    mut num_pvars: Out<'_, c_int>,
    mut num_categories: Out<'_, c_int>,
) -> Res {
    code((|| {
        ready()?;
        let i = index(cat_index, CATEGORIES.len())?;
        put_text(CATEGORIES[i].0, &mut name, &mut name_len)?;
        put_text(CATEGORIES[i].1, &mut desc, &mut desc_len)?;
        let (c, p) = members(i);
        put(&mut num_cvars, c as c_int)?;
        put(&mut num_pvars, p as c_int)?;
        put(&mut num_categories, 0)
    })())
}

/// `MPI_T_category_get_index`.
pub(crate) fn t_category_get_index(name: &str, mut cat_index: Out<'_, c_int>) -> Res {
    code((|| {
        ready()?;
        let i = CATEGORIES
            .iter()
            .position(|c| c.0 == name)
            .ok_or(MPI_T_ERR_INVALID_NAME)?;
        put(&mut cat_index, i as c_int)
    })())
}

/// The first `len` of `n` indices, 0 up.
fn list(
    cat_index: c_int,
    len: c_int,
    n: impl Fn(usize) -> usize,
    mut indices: OutSlice<'_, c_int>,
) -> Res {
    code((|| {
        ready()?;
        let i = index(cat_index, CATEGORIES.len())?;
        for k in 0..n(i).min(usize::try_from(len).unwrap_or(0)) {
            indices.set(k, k as c_int);
        }
        Ok(())
    })())
}

/// `MPI_T_category_get_cvars`.
pub(crate) fn t_category_get_cvars(
    cat_index: c_int,
    len: c_int,
    indices: OutSlice<'_, c_int>,
) -> Res {
    list(cat_index, len, |i| members(i).0, indices)
}

/// `MPI_T_category_get_pvars`.
pub(crate) fn t_category_get_pvars(
    cat_index: c_int,
    len: c_int,
    indices: OutSlice<'_, c_int>,
) -> Res {
    list(cat_index, len, |i| members(i).1, indices)
}

/// `MPI_T_category_get_categories`: none nested.
pub(crate) fn t_category_get_categories(
    cat_index: c_int,
    len: c_int,
    indices: OutSlice<'_, c_int>,
) -> Res {
    list(cat_index, len, |_| 0, indices)
}

/// `MPI_T_category_get_events`: no events.
pub(crate) fn t_category_get_events(
    cat_index: c_int,
    len: c_int,
    indices: OutSlice<'_, c_int>,
) -> Res {
    list(cat_index, len, |_| 0, indices)
}

/// `MPI_T_category_get_num_events`.
pub(crate) fn t_category_get_num_events(cat_index: c_int, mut num_events: Out<'_, c_int>) -> Res {
    code((|| {
        ready()?;
        index(cat_index, CATEGORIES.len())?;
        put(&mut num_events, 0)
    })())
}

/// `MPI_T_category_changed`: the categories never change.
pub(crate) fn t_category_changed(mut update_number: Out<'_, c_int>) -> Res {
    code(ready().and_then(|()| put(&mut update_number, 0)))
}

/// `MPI_T_event_get_num`: ferry raises no events.
pub(crate) fn t_event_get_num(mut num_events: Out<'_, c_int>) -> Res {
    code(ready().and_then(|()| put(&mut num_events, 0)))
}

/// `MPI_T_event_get_index`.
pub(crate) fn t_event_get_index(_name: &str, _event_index: Out<'_, c_int>) -> Res {
    code(ready().and(Err(MPI_T_ERR_INVALID_NAME)))
}

/// `MPI_T_source_get_num`: no event sources.
pub(crate) fn t_source_get_num(mut num_sources: Out<'_, c_int>) -> Res {
    code(ready().and_then(|()| put(&mut num_sources, 0)))
}

/// `MPI_T_source_get_timestamp`.
pub(crate) fn t_source_get_timestamp(_source_index: c_int, _timestamp: Out<'_, i64>) -> Res {
    code(ready().and(Err(MPI_T_ERR_INVALID_INDEX)))
}

/// The event calls that take an event's index, registration or instance:
/// ferry raises no events (`MPI_T_event_get_num` is 0), so no index is in
/// range and no registration or instance can exist.
macro_rules! no_event {
    ($($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty),*) => $class:ident;)*) => {$(
        $(#[$doc])*
        pub(crate) fn $name($($arg: $ty),*) -> Res {
            $(let _ = $arg;)*
            code(ready().and(Err($class)))
        }
    )*};
}

no_event! {
    /// `MPI_T_event_get_info`.
    t_event_get_info(event_index: c_int, name: TextOut<'_>, name_len: Out<'_, c_int>, verbosity: Out<'_, c_int>, array_of_datatypes: usize, array_of_displacements: usize, num_elements: Out<'_, c_int>, enumtype: Out<'_, usize>, info: Out<'_, usize>, desc: TextOut<'_>, desc_len: Out<'_, c_int>, bind: Out<'_, c_int>) => MPI_T_ERR_INVALID_INDEX;
    /// `MPI_T_event_handle_alloc`.
    t_event_handle_alloc(event_index: c_int, obj_handle: usize, info: usize, event_registration: Out<'_, usize>) => MPI_T_ERR_INVALID_INDEX;
    /// `MPI_T_event_handle_set_info`.
    t_event_handle_set_info(event_registration: usize, info: usize) => MPI_T_ERR_INVALID_HANDLE;
    /// `MPI_T_event_handle_get_info`.
    t_event_handle_get_info(event_registration: usize, info_used: Out<'_, usize>) => MPI_T_ERR_INVALID_HANDLE;
    /// `MPI_T_event_register_callback`.
    t_event_register_callback(event_registration: usize, cb_safety: c_int, info: usize, user_data: usize, event_cb_function: usize) => MPI_T_ERR_INVALID_HANDLE;
    /// `MPI_T_event_callback_set_info`.
    t_event_callback_set_info(event_registration: usize, cb_safety: c_int, info: usize) => MPI_T_ERR_INVALID_HANDLE;
    /// `MPI_T_event_callback_get_info`.
    t_event_callback_get_info(event_registration: usize, cb_safety: c_int, info_used: Out<'_, usize>) => MPI_T_ERR_INVALID_HANDLE;
    /// `MPI_T_event_handle_free`.
    t_event_handle_free(event_registration: usize, user_data: usize, free_cb_function: usize) => MPI_T_ERR_INVALID_HANDLE;
    /// `MPI_T_event_set_dropped_handler`.
    t_event_set_dropped_handler(event_registration: usize, dropped_cb_function: usize) => MPI_T_ERR_INVALID_HANDLE;
    /// `MPI_T_event_read`.
    t_event_read(event_instance: usize, element_index: c_int, buffer: usize) => MPI_T_ERR_INVALID_HANDLE;
    /// `MPI_T_event_copy`.
    t_event_copy(event_instance: usize, buffer: usize) => MPI_T_ERR_INVALID_HANDLE;
    /// `MPI_T_event_get_timestamp`.
    t_event_get_timestamp(event_instance: usize, event_timestamp: Out<'_, i64>) => MPI_T_ERR_INVALID_HANDLE;
    /// `MPI_T_event_get_source`.
    t_event_get_source(event_instance: usize, source_index: Out<'_, c_int>) => MPI_T_ERR_INVALID_HANDLE;
    /// `MPI_T_source_get_info`: there are no sources.
    t_source_get_info(source_index: c_int, name: TextOut<'_>, name_len: Out<'_, c_int>, desc: TextOut<'_>, desc_len: Out<'_, c_int>, ordering: Out<'_, c_int>, ticks_per_second: Out<'_, i64>, max_ticks: Out<'_, i64>, info: Out<'_, usize>) => MPI_T_ERR_INVALID_INDEX;
}
