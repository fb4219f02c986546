//! Attributes (caching, MPI 4.1 §7.7): the keys (`MPI_Comm_create_keyval`)
//! with the program's copy and delete callbacks and extra state, here;
//! the functions' bodies in `calls`. The ABI's predefined callbacks are
//! the small integers 0 (`MPI_COMM_NULL_COPY_FN`,
//! `MPI_COMM_NULL_DELETE_FN`) and 1 (`MPI_COMM_DUP_FN`), which are no
//! function pointers: the boundary decodes an argument into [`CopyCb`] or
//! [`DeleteCb`] (`ffi::args`), and `ffi::callbacks` calls the program's.

use std::ffi::c_int;

use crate::abi::class::*;
use crate::error::{Fail, Res};
use crate::state::ChapterCell;

/// The first keyval handed out (above every predefined key of the ABI).
pub const FIRST: c_int = 0x10000;

pub use crate::abi::callback::{CopyCb, DeleteCb, DUP_FN, NULL_FN};

/// Attribute keys (`MPI_Comm_create_keyval`), by `keyval - FIRST`.
static KEYVALS: ChapterCell<Vec<Keyval>> = ChapterCell::new(Vec::new);

impl crate::state::Runtime {
    /// The attribute keys the program made.
    pub(crate) fn keyvals(&self) -> &'static crate::ffi::cell::LevelCell<Vec<Keyval>> {
        KEYVALS.of(self)
    }
}

/// An attribute key.
#[derive(Debug, Clone, Copy)]
pub struct Keyval {
    /// The copy callback.
    pub copy: CopyCb,
    /// The delete callback.
    pub delete: DeleteCb,
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
            copy: CopyCb::Dup,
            delete: DeleteCb::Null,
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

pub(crate) mod calls;
pub(crate) mod types;
