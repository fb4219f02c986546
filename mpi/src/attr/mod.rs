//! Attribute keys (`MPI_Comm_create_keyval`): the program's copy and
//! delete callbacks and extra state. The callbacks are C functions, called
//! from `ffi/attr.rs`; here they are kept as addresses, because the ABI's
//! predefined callbacks are the small integers 0 (`MPI_COMM_NULL_COPY_FN`,
//! `MPI_COMM_NULL_DELETE_FN`) and 1 (`MPI_COMM_DUP_FN`), which are no
//! function pointers.

use std::ffi::c_int;

use crate::abi::class::*;
use crate::error::{Fail, Res};

/// The first keyval handed out (above every predefined key of the ABI).
pub const FIRST: c_int = 0x10000;

/// `MPI_COMM_NULL_COPY_FN` / `MPI_COMM_NULL_DELETE_FN`.
pub const NULL_FN: usize = 0;
/// `MPI_COMM_DUP_FN`.
pub const DUP_FN: usize = 1;

/// An attribute key.
#[derive(Debug, Clone, Copy)]
pub struct Keyval {
    /// The copy callback's address, or [`NULL_FN`] / [`DUP_FN`].
    pub copy: usize,
    /// The delete callback's address, or [`NULL_FN`].
    pub delete: usize,
    /// The program's extra state, passed to both.
    pub extra: usize,
    /// `MPI_Comm_free_keyval` ran: no new attribute may use it, the
    /// existing ones still get their delete callback.
    pub freed: bool,
}

/// The table index of keyval `k`.
///
/// # Errors
/// `MPI_ERR_KEYVAL` for a value no `MPI_Comm_create_keyval` gave.
pub fn index(k: c_int, table: &[Keyval]) -> Res<usize> {
    usize::try_from(k - FIRST)
        .ok()
        .filter(|&i| i < table.len())
        .ok_or_else(|| Fail::msg(MPI_ERR_KEYVAL, format!("{k} is not an attribute key")))
}

/// The keyval of table index `i`.
pub fn keyval_of(i: usize) -> Res<c_int> {
    c_int::try_from(i)
        .ok()
        .and_then(|i| i.checked_add(FIRST))
        .ok_or_else(|| Fail::new(MPI_ERR_INTERN, "too many attribute keys"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyvals_map_to_indices_and_back() {
        let kv = Keyval {
            copy: DUP_FN,
            delete: NULL_FN,
            extra: 0,
            freed: false,
        };
        let t = vec![kv; 3];
        assert_eq!(index(keyval_of(2).unwrap(), &t).unwrap(), 2);
        for bad in [0, 501, FIRST + 3, -1, c_int::MAX] {
            assert_eq!(index(bad, &t).unwrap_err().class, MPI_ERR_KEYVAL);
        }
    }
}

/// The exported functions' bodies.
#[allow(unsafe_code)]
pub(crate) mod calls;
