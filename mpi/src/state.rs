//! The library's global state: the ferry world, the predefined
//! communicators, and the tables of user objects.
//!
//! Lifetime: `MPI_Init` builds one [`Runtime`] and stores it in a
//! `OnceLock` for the rest of the process (MPI cannot be initialised twice);
//! `MPI_Finalize` finalizes the ferry world inside it, after which every
//! ferry call reports `Finalized`.
//!
//! The chapters keep their own objects (requests, datatypes, ops, keyvals,
//! messages, the attached buffer) in `ChapterCell`s of their own: made at
//! the runtime's thread level on first use, so this floor names none of
//! the types above it.
//!
//! Locks: `MPI_COMM_WORLD` and `MPI_COMM_SELF` are fields, reached with no
//! lock. User objects are in per-kind [`Table`]s, each in a `LevelCell`
//! (`ffi/cell.rs`): below `MPI_THREAD_MULTIPLE` a table is reached with no
//! lock at all; at `MULTIPLE` a `Mutex` guards it, held only for a lookup,
//! an insert or a removal, never across a blocking ferry call (a thread
//! blocked in `MPI_Recv` must not stop another from posting the matching
//! send). Error handlers, rarely touched, keep a plain `Mutex`.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use ferry::{Comm, ThreadLevel, World};

use crate::abi::class::*;
use crate::abi::*;
use crate::errhandler::Errh;
use crate::error::{Fail, Res};
use crate::ffi::cell::LevelCell;
use crate::handle::{Kind, Table};
use crate::info::Info;

/// A communicator and what MPI attaches to it.
#[derive(Debug)]
pub struct CommObj {
    /// The ferry communicator (cheap to clone: an `Arc`).
    pub comm: Comm,
    /// Name and error handler, changed rarely.
    pub meta: Mutex<CommMeta>,
}

/// What `MPI_Comm_set_name`, `MPI_Comm_set_errhandler`,
/// `MPI_Comm_set_attr` and `MPI_Comm_set_info` change.
#[derive(Debug, Clone)]
pub struct CommMeta {
    /// `MPI_Comm_get_name`.
    pub name: String,
    /// The error handler in force.
    pub errh: Errh,
    /// User attributes: `(keyval, value)` in the order they were set.
    pub attrs: Vec<(c_int, usize)>,
    /// The info hints the program gave (`MPI_Comm_set_info`, `*_with_info`).
    pub info: Info,
    /// The process topology attached to it (`MPI_Cart_create`, ...).
    pub topo: Option<std::sync::Arc<crate::topology::Topo>>,
}

impl CommObj {
    /// A communicator with a name and an error handler.
    pub fn new(comm: Comm, name: &str, errh: Errh) -> CommObj {
        CommObj {
            comm,
            meta: Mutex::new(CommMeta {
                name: name.to_owned(),
                errh,
                attrs: Vec::new(),
                info: Info::default(),
                topo: None,
            }),
        }
    }
}

/// The values `MPI_Comm_get_attr` hands out pointers to: they live as long
/// as the process, as the standard requires.
#[derive(Debug)]
#[allow(missing_docs)]
pub struct Attrs {
    pub tag_ub: c_int,
    pub host: c_int,
    pub io: c_int,
    pub wtime_is_global: c_int,
    pub universe_size: c_int,
    pub appnum: c_int,
}

/// Everything `MPI_Init` sets up.
#[derive(Debug)]
pub struct Runtime {
    /// Taken by `MPI_Finalize`.
    world: Mutex<Option<World>>,
    /// `MPI_COMM_WORLD`.
    pub world_comm: CommObj,
    /// `MPI_COMM_SELF`.
    pub self_comm: CommObj,
    /// Communicators the program made.
    pub comms: LevelCell<Table<Arc<CommObj>>>,
    /// Groups the program holds.
    pub groups: LevelCell<Table<ferry::Group>>,
    /// Names the program gave predefined datatypes.
    pub type_names: LevelCell<Vec<(usize, String)>>,
    /// The thread level in force.
    pub level: ThreadLevel,
    /// ferry's wait mode in force (`MPIX_Get_wait_mode`).
    pub wait_mode: ferry::WaitMode,
    /// Job rank, for messages.
    pub rank: i32,
    /// Job size.
    pub size: u32,
    /// Predefined attribute values.
    pub attrs: Attrs,
}

static RUNTIME: OnceLock<Runtime> = OnceLock::new();
static FINALIZED: AtomicBool = AtomicBool::new(false);
/// Serialises `MPI_Init` against itself (two threads calling it at once).
static INIT_LOCK: Mutex<()> = Mutex::new(());
static EPOCH: OnceLock<Instant> = OnceLock::new();

/// The wait mode `MPIX_Set_wait_mode` asked for, used by `MPI_Init`.
static WAIT_MODE: Mutex<Option<ferry::WaitMode>> = Mutex::new(None);

/// Records `MPIX_Set_wait_mode`'s choice for `MPI_Init`.
pub(crate) fn choose_wait_mode(m: ferry::WaitMode) {
    *lock(&WAIT_MODE) = Some(m);
}

/// The wait mode `MPIX_Set_wait_mode` chose, if any.
pub(crate) fn chosen_wait_mode() -> Option<ferry::WaitMode> {
    *lock(&WAIT_MODE)
}

pub use crate::sync::lock;

/// The runtime, if `MPI_Init` ran and `MPI_Finalize` did not.
///
/// # Errors
/// `MPI_ERR_OTHER` before `MPI_Init` or after `MPI_Finalize`.
#[inline]
pub fn rt() -> Res<&'static Runtime> {
    match RUNTIME.get() {
        Some(r) if !FINALIZED.load(Ordering::Relaxed) => Ok(r),
        Some(_) => Err(Fail::new(MPI_ERR_OTHER, "MPI was already finalized")),
        None => Err(Fail::new(MPI_ERR_OTHER, "MPI is not initialized")),
    }
}

/// The runtime even after finalize (error handlers, the attributes of
/// calls allowed after it).
pub fn rt_any() -> Option<&'static Runtime> {
    RUNTIME.get()
}

/// True once `MPI_Init` succeeded (the world model: a session's start
/// does not count, MPI 4.1 §11.2.1).
pub fn initialized() -> bool {
    WORLD_MODEL.load(Ordering::Relaxed) != WORLD_NEVER
}

/// True once `MPI_Finalize` ran.
pub fn finalized() -> bool {
    WORLD_MODEL.load(Ordering::Relaxed) == WORLD_DONE
}

/// Seconds since the first call that asked (`MPI_Wtime`).
pub fn wtime() -> f64 {
    EPOCH.get_or_init(Instant::now).elapsed().as_secs_f64()
}

/// The ferry level for an `MPI_THREAD_*` value: the levels are ordered, so
/// a value between two levels asks for the lower one.
pub fn level_of(required: c_int) -> ThreadLevel {
    match required {
        r if r >= MPI_THREAD_MULTIPLE => ThreadLevel::Multiple,
        r if r >= MPI_THREAD_SERIALIZED => ThreadLevel::Serialized,
        r if r >= MPI_THREAD_FUNNELED => ThreadLevel::Funneled,
        _ => ThreadLevel::Single,
    }
}

/// The `MPI_THREAD_*` value of a ferry level.
pub fn level_value(level: ThreadLevel) -> c_int {
    match level {
        ThreadLevel::Single => MPI_THREAD_SINGLE,
        ThreadLevel::Funneled => MPI_THREAD_FUNNELED,
        ThreadLevel::Serialized => MPI_THREAD_SERIALIZED,
        _ => MPI_THREAD_MULTIPLE,
    }
}

/// Where the world model stands (`MPI_Init` .. `MPI_Finalize`), apart
/// from the runtime: sessions can start the runtime without it (MPI 4.0
/// §11.3), and it can outlive `MPI_Finalize` while a session lives.
const WORLD_NEVER: u8 = 0;
const WORLD_ACTIVE: u8 = 1;
const WORLD_DONE: u8 = 2;
static WORLD_MODEL: AtomicU8 = AtomicU8::new(WORLD_NEVER);
/// Sessions initialized and not yet finalized.
static SESSIONS: AtomicUsize = AtomicUsize::new(0);

/// `MPI_Init_thread`: the world model starts, on the runtime a session
/// started or on a new one at `level` (`None`: `MPI_Init`, which takes
/// `FERRY_THREAD_LEVEL` if set, else `MPI_THREAD_SINGLE`; a runtime a
/// session started keeps its level).
///
/// # Errors
/// Initialised twice, the runtime already ended, or ferry's setup failed.
pub fn init(level: Option<c_int>) -> Res<&'static Runtime> {
    let _serial = lock(&INIT_LOCK);
    if WORLD_MODEL.load(Ordering::Relaxed) != WORLD_NEVER {
        return Err(Fail::new(
            MPI_ERR_OTHER,
            "MPI_Init called twice (MPI can be initialized once per process)",
        ));
    }
    let rt = runtime(level)?;
    WORLD_MODEL.store(WORLD_ACTIVE, Ordering::Relaxed);
    Ok(rt)
}

/// `MPI_Session_init`: one more session on the runtime, started here at
/// `level` if no session or `MPI_Init` started it yet.
///
/// # Errors
/// As for [`init`].
pub fn start_session(level: Option<c_int>) -> Res<&'static Runtime> {
    let _serial = lock(&INIT_LOCK);
    let rt = runtime(level)?;
    SESSIONS.fetch_add(1, Ordering::Relaxed);
    Ok(rt)
}

/// `MPI_Session_finalize`: one session less; the last one ends the
/// runtime unless the world model is still active.
///
/// # Errors
/// As for [`Runtime::finalize`].
pub fn end_session() -> Res {
    let _serial = lock(&INIT_LOCK);
    let left = SESSIONS.fetch_sub(1, Ordering::Relaxed).saturating_sub(1);
    if left == 0 && WORLD_MODEL.load(Ordering::Relaxed) != WORLD_ACTIVE {
        return rt()?.finalize();
    }
    Ok(())
}

/// `MPI_Finalize`'s end of the world model; the runtime ends with it
/// unless a session lives.
///
/// # Errors
/// `MPI_Init` did not run, `MPI_Finalize` already did, or as for
/// [`Runtime::finalize`].
pub fn end_world_model() -> Res {
    let _serial = lock(&INIT_LOCK);
    if WORLD_MODEL.load(Ordering::Relaxed) != WORLD_ACTIVE {
        return Err(Fail::new(
            MPI_ERR_OTHER,
            "MPI_Finalize without MPI_Init, or called twice",
        ));
    }
    WORLD_MODEL.store(WORLD_DONE, Ordering::Relaxed);
    if SESSIONS.load(Ordering::Relaxed) == 0 {
        return rt()?.finalize();
    }
    Ok(())
}

/// The runtime, started at `level` if it is not yet (callers hold
/// `INIT_LOCK`).
fn runtime(level: Option<c_int>) -> Res<&'static Runtime> {
    if RUNTIME.get().is_some() {
        // Once ended, ferry cannot start again in this process.
        return rt();
    }
    let _ = EPOCH.get_or_init(Instant::now);
    let mut config = ferry::Config::from_env()?;
    if let Some(mode) = chosen_wait_mode() {
        config.wait_mode = mode;
    }
    // MPI_Testany, MPI_Waitany and MPI_Request_get_status_any report the
    // lowest complete index, as MPICH and Open MPI do and as programs
    // written against them expect.
    config.engine.any_order = ferry::ferry_core::AnyOrder::Lowest;
    match level {
        Some(l) => config.thread_level = level_of(l),
        None if std::env::var_os("FERRY_THREAD_LEVEL").is_some() => {}
        None => config.thread_level = ThreadLevel::Single,
    }
    let world = config.init()?;
    crate::ffi::cell::mark_main_thread();
    let level = world.thread_level();
    let errh = Errh::Fatal;
    let runtime = Runtime {
        world_comm: CommObj::new(world.world(), "MPI_COMM_WORLD", errh.clone()),
        self_comm: CommObj::new(world.self_comm(), "MPI_COMM_SELF", errh),
        level,
        wait_mode: world.config().wait_mode,
        rank: world.rank(),
        size: world.size(),
        attrs: Attrs {
            tag_ub: ferry::TAG_UB,
            host: MPI_PROC_NULL,
            // Every rank can do I/O.
            io: MPI_ANY_SOURCE,
            wtime_is_global: 0,
            universe_size: c_int::try_from(world.size()).unwrap_or(c_int::MAX),
            appnum: 0,
        },
        world: Mutex::new(Some(world)),
        comms: LevelCell::new(Table::new(Kind::Comm), level),
        type_names: LevelCell::new(Vec::new(), level),
        groups: LevelCell::new(Table::new(Kind::Group), level),
    };
    RUNTIME
        .set(runtime)
        .map_err(|_| Fail::new(MPI_ERR_INTERN, "runtime set twice"))?;
    rt()
}

impl Runtime {
    /// `MPI_Finalize`: ferry's collective finalize. Requests and
    /// communicators still in the tables are dropped first (their
    /// operations can no longer complete).
    ///
    /// # Errors
    /// Finalized twice, or ferry's finalize failed.
    pub fn finalize(&self) -> Res {
        // What the chapters must do while the world still works (buffered
        // messages go out).
        let before: Vec<_> = lock(&BEFORE_FINALIZE).clone();
        for step in before {
            step(self)?;
        }
        let world = lock(&self.world).take();
        let Some(world) = world else {
            return Err(Fail::new(MPI_ERR_OTHER, "MPI_Finalize called twice"));
        };
        FINALIZED.store(true, Ordering::Relaxed);
        world.finalize()?;
        // Drop after the world: a pending request's drop would otherwise
        // free its operation inside an engine that is about to go anyway.
        // The tables are taken out first and dropped outside their cells.
        let emptied: Vec<_> = lock(&EMPTIED_AT_FINALIZE).clone();
        for cell in emptied {
            cell.empty()?;
        }
        let comms = self
            .comms
            .with(|t| std::mem::replace(t, Table::new(Kind::Comm)))?;
        drop(comms);
        Ok(())
    }

    /// True on the thread that called `MPI_Init`.
    pub fn is_thread_main(&self) -> bool {
        lock(&self.world)
            .as_ref()
            .is_some_and(World::is_thread_main)
    }

    /// Stores a new communicator; its handle.
    ///
    /// # Errors
    /// `MPI_ERR_INTERN` if the table is full.
    pub fn add_comm(&self, obj: CommObj) -> Res<usize> {
        self.comms
            .with(|t| t.insert(Arc::new(obj)))?
            .ok_or_else(|| Fail::new(MPI_ERR_INTERN, "too many communicators"))
    }

    /// A counted reference to communicator `handle` at any level (for a
    /// call that keeps it across program code, or beyond the call).
    ///
    /// # Errors
    /// As for [`Runtime::comm`].
    pub fn comm_arc(&self, handle: usize) -> Res<Arc<CommObj>> {
        let fail = |b| Fail::handle(MPI_ERR_COMM, b, "communicator").on(MPI_COMM_SELF);
        self.comms
            .with(|t| t.get(handle).map(Arc::clone))?
            .map_err(fail)
    }
}

/// A chapter's objects in the runtime (a table of requests, of datatypes,
/// ...): a `LevelCell` made at the runtime's thread level the first time a
/// call reaches it. The chapter owns the static (`static REQUESTS:
/// ChapterCell<Table<ReqObj>>`) and reaches it through a `Runtime` method
/// of its own, so this floor does not name the chapter's types.
pub(crate) struct ChapterCell<T: 'static> {
    cell: OnceLock<LevelCell<T>>,
    init: fn() -> T,
    /// Emptied (the old value dropped) after the world finalizes.
    emptied_at_finalize: bool,
}

impl<T: Send + 'static> ChapterCell<T> {
    /// A cell whose value starts as `init()` and stays for the process.
    pub(crate) const fn new(init: fn() -> T) -> ChapterCell<T> {
        ChapterCell {
            cell: OnceLock::new(),
            init,
            emptied_at_finalize: false,
        }
    }

    /// A cell emptied (back to `init()`, the old value dropped) after
    /// `MPI_Finalize` finalizes the world: what holds ferry operations,
    /// whose drop would otherwise free them inside an engine about to go.
    pub(crate) const fn emptied_at_finalize(init: fn() -> T) -> ChapterCell<T> {
        ChapterCell {
            cell: OnceLock::new(),
            init,
            emptied_at_finalize: true,
        }
    }

    /// The cell, made at `rt`'s thread level on first use.
    #[inline]
    pub(crate) fn of(&'static self, rt: &Runtime) -> &'static LevelCell<T> {
        match self.cell.get() {
            Some(c) => c,
            None => self.make(rt),
        }
    }

    #[cold]
    #[inline(never)]
    fn make(&'static self, rt: &Runtime) -> &'static LevelCell<T> {
        self.cell.get_or_init(|| {
            if self.emptied_at_finalize {
                lock(&EMPTIED_AT_FINALIZE).push(self);
            }
            LevelCell::new((self.init)(), rt.level)
        })
    }
}

/// A cell [`Runtime::finalize`] empties.
trait Emptied: Sync {
    fn empty(&self) -> Res;
}

impl<T: Send + 'static> Emptied for ChapterCell<T> {
    fn empty(&self) -> Res {
        if let Some(c) = self.cell.get() {
            // Taken out first and dropped outside the cell.
            let old = c.with(|v| std::mem::replace(v, (self.init)()))?;
            drop(old);
        }
        Ok(())
    }
}

static EMPTIED_AT_FINALIZE: Mutex<Vec<&'static dyn Emptied>> = Mutex::new(Vec::new());

/// A chapter's step at `MPI_Finalize`.
type FinalizeStep = fn(&Runtime) -> Res;

/// What chapters must do at `MPI_Finalize` before the world finalizes.
static BEFORE_FINALIZE: Mutex<Vec<FinalizeStep>> = Mutex::new(Vec::new());

/// What chapters do when the program frees a communicator.
static ON_COMM_FREE: Mutex<Vec<fn(&Comm)>> = Mutex::new(Vec::new());

/// Has `MPI_Comm_free` (and `MPI_Comm_disconnect`) run `hook` on the
/// communicator it frees (a chapter registers once, when it first keeps
/// something per communicator: an attached buffer).
pub(crate) fn on_comm_free(hook: fn(&Comm)) {
    lock(&ON_COMM_FREE).push(hook);
}

/// Runs the [`on_comm_free`] hooks on `c`, which the program frees.
pub(crate) fn comm_freed(c: &Comm) {
    let hooks: Vec<_> = lock(&ON_COMM_FREE).clone();
    for hook in hooks {
        hook(c);
    }
}

/// Has `MPI_Finalize` run `step` while the world still works (a chapter
/// registers once, when it first holds something to finish: the attached
/// buffer's messages).
pub(crate) fn before_finalize(step: FinalizeStep) {
    lock(&BEFORE_FINALIZE).push(step);
}

/// A communicator found by [`Runtime::comm`].
#[derive(Debug)]
pub enum CommRef<'a> {
    /// `MPI_COMM_WORLD` or `MPI_COMM_SELF`.
    Borrowed(&'a CommObj),
    /// A user communicator (kept alive by this reference even if another
    /// thread frees its handle meanwhile).
    Shared(Arc<CommObj>),
}

impl std::ops::Deref for CommRef<'_> {
    type Target = CommObj;
    fn deref(&self) -> &CommObj {
        match self {
            CommRef::Borrowed(c) => c,
            CommRef::Shared(c) => c,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_levels_map_both_ways() {
        for (v, l) in [
            (MPI_THREAD_SINGLE, ThreadLevel::Single),
            (MPI_THREAD_FUNNELED, ThreadLevel::Funneled),
            (MPI_THREAD_SERIALIZED, ThreadLevel::Serialized),
            (MPI_THREAD_MULTIPLE, ThreadLevel::Multiple),
        ] {
            assert_eq!(level_of(v), l);
            assert_eq!(level_value(l), v);
        }
        assert_eq!(level_of(-5), ThreadLevel::Single);
        assert_eq!(level_of(1500), ThreadLevel::Funneled);
        assert_eq!(level_of(99_999), ThreadLevel::Multiple);
    }
}
