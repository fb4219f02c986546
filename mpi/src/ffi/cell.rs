//! [`LevelCell`]: the tables of user objects, locked only where the thread
//! level needs it.
//!
//! Below `MPI_THREAD_MULTIPLE` the program promises that no two threads
//! are inside MPI at once (`SINGLE`, `FUNNELED`: only the main thread
//! calls; `SERIALIZED`: any thread, one at a time, the program ordering
//! the calls with its own synchronisation). A table then needs no lock:
//! the cell hands out its value directly. `FUNNELED` and `SINGLE` also
//! check that the caller is the main thread (one thread-local read), as
//! ferry does on its own calls. At `MULTIPLE` (and for cells used before
//! `MPI_Init`) a `Mutex` guards the value.
//!
//! Every level keeps a `busy` flag: a closure that re-enters the cell it
//! runs in (a bug: the library never calls program code while it holds a
//! cell) gets `MPI_ERR_INTERN` instead of a second `&mut` to the value.

use std::cell::{Cell, UnsafeCell};
use std::sync::Mutex;

use ferry::ThreadLevel;

use crate::abi::class::*;
use crate::error::{Fail, Res};
use crate::sync::lock;

thread_local! {
    /// Set on the thread that called `MPI_Init`.
    static MAIN: Cell<bool> = const { Cell::new(false) };
}

/// Marks the calling thread as MPI's main thread (`MPI_Init`).
pub(crate) fn mark_main_thread() {
    MAIN.with(|m| m.set(true));
}

/// How a cell guards its value (fixed when it is made).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Guard {
    /// `MULTIPLE`, or a cell made before the thread level is known.
    Mutex,
    /// `SINGLE`, `FUNNELED`: the main thread only, no lock.
    MainThread,
    /// `SERIALIZED`: the program serialises its calls, no lock.
    Serialized,
}

/// A value that MPI calls reach; see the module docs.
pub struct LevelCell<T> {
    guard: Guard,
    lock: Mutex<()>,
    busy: UnsafeCell<bool>,
    value: UnsafeCell<T>,
}

// SAFETY: the value is only reached through `with`, which at MULTIPLE holds
// `lock` for the whole access, and below it relies on the program's promise
// that one thread at a time is inside MPI (checked for the main thread at
// SINGLE and FUNNELED); either way accesses never overlap, so sharing the
// cell between threads shares no `T` concurrently. Moving a `T` between
// threads needs `T: Send`.
unsafe impl<T: Send> Sync for LevelCell<T> {}

impl<T> std::fmt::Debug for LevelCell<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LevelCell")
            .field("guard", &self.guard)
            .finish_non_exhaustive()
    }
}

/// Clears the busy flag when an access ends, even by a panic.
struct Busy<'a>(&'a UnsafeCell<bool>);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        // SAFETY: the access that set the flag is the only one running (see
        // `with`), so nothing else reads or writes the flag now.
        unsafe { *self.0.get() = false };
    }
}

impl<T> LevelCell<T> {
    /// A cell guarded as `level` needs.
    pub fn new(value: T, level: ThreadLevel) -> LevelCell<T> {
        let guard = match level {
            ThreadLevel::Single | ThreadLevel::Funneled => Guard::MainThread,
            ThreadLevel::Serialized => Guard::Serialized,
            _ => Guard::Mutex,
        };
        LevelCell {
            guard,
            lock: Mutex::new(()),
            busy: UnsafeCell::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// True when no lock guards the cell (below `MULTIPLE`).
    pub fn unlocked(&self) -> bool {
        self.guard != Guard::Mutex
    }

    /// Runs `f` on the value. `f` must not call into MPI (no program code
    /// runs inside it).
    ///
    /// # Errors
    /// `MPI_ERR_OTHER` for a call from another thread than the main one at
    /// `SINGLE`/`FUNNELED`; `MPI_ERR_INTERN` for a re-entered cell.
    #[inline]
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> Res<R> {
        let _locked = match self.guard {
            Guard::Mutex => Some(lock(&self.lock)),
            Guard::MainThread => {
                if !MAIN.with(Cell::get) {
                    return Err(Fail::new(
                        MPI_ERR_OTHER,
                        "MPI called from a thread other than the main one at MPI_THREAD_SINGLE or MPI_THREAD_FUNNELED",
                    ));
                }
                None
            }
            Guard::Serialized => None,
        };
        // SAFETY: accesses never overlap (the `Sync` argument above): the
        // lock is held, or this is the one thread inside MPI. The flag
        // catches the same thread coming back in through `f`.
        let reentered = unsafe { std::mem::replace(&mut *self.busy.get(), true) };
        if reentered {
            return Err(Fail::new(
                MPI_ERR_INTERN,
                "internal error (please report): a table was re-entered",
            ));
        }
        let _busy = Busy(&self.busy);
        // SAFETY: as above; and `busy` was clear, so no other `&mut` to the
        // value exists further up this thread's stack.
        let value = unsafe { &mut *self.value.get() };
        Ok(f(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_re_entered_cell_is_an_error_not_an_alias() {
        let cell = LevelCell::new(1, ThreadLevel::Serialized);
        let nested = cell.with(|_| cell.with(|_| ()).map_err(|f| f.class));
        assert_eq!(nested.unwrap(), Err(MPI_ERR_INTERN));
        assert_eq!(cell.with(|v| *v).unwrap(), 1, "usable again after");
        let locked = LevelCell::new(5, ThreadLevel::Multiple);
        assert!(!locked.unlocked());
        assert_eq!(locked.with(|v| std::mem::replace(v, 6)).unwrap(), 5);
        assert_eq!(locked.with(|v| *v).unwrap(), 6);
    }

    #[test]
    fn main_thread_cells_refuse_other_threads() {
        mark_main_thread();
        let cell = LevelCell::new(0u32, ThreadLevel::Funneled);
        assert!(cell.unlocked());
        assert_eq!(cell.with(|v| *v).unwrap(), 0);
        std::thread::scope(|s| {
            s.spawn(|| {
                let e = cell.with(|v| *v).unwrap_err();
                assert_eq!(e.class, MPI_ERR_OTHER);
            });
        });
    }
}
