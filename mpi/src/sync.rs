//! The poison-tolerant lock every table and registry of this crate takes.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, ignoring poisoning: a panic inside a body is caught and
/// reported as `MPI_ERR_INTERN`, and every table operation leaves the
/// table consistent, so a poisoned lock still guards valid data.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
