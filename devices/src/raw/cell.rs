//! [`EngineCell`]: what stands between the engine and the threads that
//! call it, chosen by the thread level at init (`MPI_Init_thread`).
//!
//! - `Multiple`: a mutex, as every MPI library has for
//!   `MPI_THREAD_MULTIPLE`.
//! - `Serialized`: no mutex. One atomic swap marks the cell busy on entry
//!   and a release store frees it, so a call that overlaps another is
//!   refused with [`ApiError::ThreadLevel`] instead of racing. The swap's
//!   acquire and the store's release order one call's accesses before the
//!   next call's, whichever thread makes it.
//! - `Single` and `Funneled`: no atomic operation at all. Only the thread
//!   that initialised the world may call (a thread-local id compared with
//!   the owner's); a plain flag, touched only by that thread, refuses a
//!   nested call (a user reduction op calling back into ferry, say), which
//!   would otherwise make a second `&mut` to the engine.
//!
//! Either way every access to the value happens on one thread at a time,
//! which is what makes the `Sync` implementation below sound.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::config::ThreadLevel;
use crate::error::ApiError;

/// A value behind the thread level's guard; see the module docs.
pub(crate) struct EngineCell<T> {
    level: ThreadLevel,
    /// The thread allowed to call under `Single` and `Funneled`.
    owner: u64,
    /// A call is in progress (below Multiple). Serialized: any thread may
    /// enter, so it is taken with an atomic swap. Single and Funneled: only
    /// the owner thread reads or writes it (after the owner check), so
    /// relaxed loads and stores, plain moves, suffice.
    busy: AtomicBool,
    mutex: Mutex<()>,
    value: UnsafeCell<T>,
}

// SAFETY: the value is only reached through a `CellGuard`, and `lock` hands
// out at most one guard at a time under every level (see the module docs):
// the mutex (Multiple), the busy flag's swap (Serialized), or the owner
// check plus the busy flag, both on the one owner thread (Single,
// Funneled). So `&EngineCell<T>` shared between threads never gives two
// threads access at once, and `T: Send` lets the value be used from
// whichever thread holds the guard.
unsafe impl<T: Send> Sync for EngineCell<T> {}

// SAFETY: moving the cell moves the value; `T: Send` allows that.
unsafe impl<T: Send> Send for EngineCell<T> {}

impl<T> std::fmt::Debug for EngineCell<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineCell")
            .field("level", &self.level)
            .finish_non_exhaustive()
    }
}

/// This thread's id: a number no other live thread of the process has.
///
/// On x86-64 and AArch64 Linux it is the thread pointer (the TCB's
/// address, which the ABI keeps in `fs` / `tpidr_el0`): one register read.
/// A thread-local would do, but in `libmpi_abi.so` (a shared object, so
/// general-dynamic TLS) every read is a call to `__tls_get_addr`, on every
/// engine entry of the C ABI. A thread that exited may leave its pointer
/// to a later thread; the owner checks below then accept that thread,
/// which cannot race with the owner, who is gone.
#[inline(always)]
pub(crate) fn thread_number() -> u64 {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        let tp: u64;
        // SAFETY: reads the TCB's self-pointer at fs:0, which the x86-64
        // TLS ABI (glibc and musl alike) sets for every thread before it
        // runs any code; no memory is written, and the stack is untouched.
        unsafe {
            std::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp, options(nostack, readonly, preserves_flags));
        }
        tp
    }
    #[cfg(all(target_os = "linux", target_arch = "aarch64"))]
    {
        let tp: u64;
        // SAFETY: reads the thread pointer register, which the AArch64
        // TLS ABI sets for every thread; no memory is touched.
        unsafe {
            std::arch::asm!("mrs {}, tpidr_el0", out(reg) tp, options(nomem, nostack, preserves_flags));
        }
        tp
    }
    #[cfg(not(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )))]
    {
        use std::cell::Cell;
        use std::sync::atomic::AtomicU64;
        static NEXT: AtomicU64 = AtomicU64::new(1);
        thread_local! {
            static ID: Cell<u64> = const { Cell::new(0) };
        }
        ID.with(|id| match id.get() {
            0 => {
                let n = NEXT.fetch_add(1, Ordering::Relaxed);
                id.set(n);
                n
            }
            n => n,
        })
    }
}

impl<T> EngineCell<T> {
    /// A cell owned by the calling thread (the one that may call under
    /// `Single` and `Funneled`).
    pub(crate) fn new(level: ThreadLevel, value: T) -> EngineCell<T> {
        EngineCell {
            level,
            owner: thread_number(),
            busy: AtomicBool::new(false),
            mutex: Mutex::new(()),
            value: UnsafeCell::new(value),
        }
    }

    pub(crate) fn level(&self) -> ThreadLevel {
        self.level
    }

    /// True on the thread that made the cell (`MPI_Is_thread_main`).
    pub(crate) fn is_owner_thread(&self) -> bool {
        thread_number() == self.owner
    }

    /// Enters the cell.
    ///
    /// # Errors
    /// [`ApiError::ThreadLevel`]: a call from another thread than the
    /// owner (Single, Funneled), a call overlapping another (Serialized),
    /// or a call from inside a call (every level but Multiple, where it
    /// would deadlock as with any mutex).
    #[inline(always)]
    pub(crate) fn lock(&self) -> Result<CellGuard<'_, T>, ApiError> {
        let mutex = match self.level {
            ThreadLevel::Multiple => {
                Some(self.mutex.lock().unwrap_or_else(PoisonError::into_inner))
            }
            ThreadLevel::Serialized => {
                if self.busy.swap(true, Ordering::Acquire) {
                    return Err(ApiError::ThreadLevel {
                        level: self.level,
                        misuse: "a call overlapped another call",
                    });
                }
                None
            }
            ThreadLevel::Single | ThreadLevel::Funneled => {
                if thread_number() != self.owner {
                    return Err(ApiError::ThreadLevel {
                        level: self.level,
                        misuse: "a call from another thread than the one that initialised ferry",
                    });
                }
                if self.busy.load(Ordering::Relaxed) {
                    return Err(ApiError::ThreadLevel {
                        level: self.level,
                        misuse: "a call from inside another call",
                    });
                }
                self.busy.store(true, Ordering::Relaxed);
                None
            }
        };
        Ok(CellGuard {
            cell: self,
            _mutex: mutex,
        })
    }
}

/// Access to an [`EngineCell`]'s value; leaving releases the cell.
pub(crate) struct CellGuard<'a, T> {
    cell: &'a EngineCell<T>,
    _mutex: Option<MutexGuard<'a, ()>>,
}

impl<T> std::ops::Deref for CellGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: this guard is the only one (see `EngineCell`'s `Sync`).
        unsafe { &*self.cell.value.get() }
    }
}

impl<T> std::ops::DerefMut for CellGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: this guard is the only one, and `&mut self` makes this the
        // only reference made through it.
        unsafe { &mut *self.cell.value.get() }
    }
}

impl<T> Drop for CellGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        match self.cell.level {
            // The mutex guard releases itself after this.
            ThreadLevel::Multiple => {}
            ThreadLevel::Serialized => self.cell.busy.store(false, Ordering::Release),
            ThreadLevel::Single | ThreadLevel::Funneled => {
                self.cell.busy.store(false, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn funneled_refuses_other_threads_and_nested_calls() {
        let cell = EngineCell::new(ThreadLevel::Funneled, 5u32);
        {
            let mut g = cell.lock().expect("owner");
            *g += 1;
            assert!(matches!(cell.lock(), Err(ApiError::ThreadLevel { .. })));
        }
        assert_eq!(*cell.lock().expect("owner again"), 6);
        std::thread::scope(|s| {
            s.spawn(|| {
                assert!(!cell.is_owner_thread());
                assert!(matches!(cell.lock(), Err(ApiError::ThreadLevel { .. })));
            });
        });
    }

    #[test]
    fn serialized_takes_turns_across_threads_and_refuses_overlap() {
        let cell = EngineCell::new(ThreadLevel::Serialized, 0u64);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    // Threads take turns; an overlap is refused, never raced.
                    let mut done = 0;
                    while done < 10_000 {
                        if let Ok(mut g) = cell.lock() {
                            *g += 1;
                            done += 1;
                        }
                    }
                });
            }
        });
        assert_eq!(*cell.lock().expect("free"), 20_000);
        let held = cell.lock().expect("free");
        std::thread::scope(|s| {
            s.spawn(|| assert!(matches!(cell.lock(), Err(ApiError::ThreadLevel { .. }))));
        });
        drop(held);
    }

    #[test]
    fn multiple_is_a_mutex() {
        let cell = EngineCell::new(ThreadLevel::Multiple, 0u64);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..10_000 {
                        *cell.lock().expect("multiple never refuses") += 1;
                    }
                });
            }
        });
        assert_eq!(*cell.lock().expect("free"), 40_000);
    }
}
