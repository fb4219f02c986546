//! Requests and their completion (MPI 4.1 §3.7 and chapter 13's
//! generalized requests): what a handle names (`handle`), the request
//! object (`object`) and its post step (`post`), the one completion path
//! (`batch`) and the calls on it (`complete`, `get_status`), giving up on
//! a request (`cancel`), requests freed while pending (`orphan`), and the
//! requests a thread blocks on at `MPI_THREAD_MULTIPLE` (`waiting`).

pub(crate) mod batch;
pub(crate) mod cancel;
pub(crate) mod complete;
pub(crate) mod get_status;
pub(crate) mod greq;
pub(crate) mod handle;
pub(crate) mod object;
pub(crate) mod orphan;
pub(crate) mod post;
pub(crate) mod waiting;

pub(crate) use object::ReqObj;

use crate::abi::class::MPI_ERR_INTERN;
use crate::error::{Fail, Res};
use crate::ffi::cell::LevelCell;
use crate::handle::{Kind, Table};
use crate::state::{ChapterCell, Runtime};

/// Requests in flight (and inactive persistent ones).
static REQUESTS: ChapterCell<Table<ReqObj>> =
    ChapterCell::emptied_at_finalize(|| Table::new(Kind::Request));

/// Requests the program freed whose post step is still to run (`orphan.rs`).
static ORPHANS: ChapterCell<Vec<ReqObj>> = ChapterCell::emptied_at_finalize(Vec::new);

impl Runtime {
    /// The request table.
    #[inline]
    pub(crate) fn requests(&self) -> &'static LevelCell<Table<ReqObj>> {
        REQUESTS.of(self)
    }

    /// The orphaned requests.
    pub(crate) fn orphans(&self) -> &'static LevelCell<Vec<ReqObj>> {
        ORPHANS.of(self)
    }

    /// Stores a new request; its handle.
    ///
    /// # Errors
    /// `MPI_ERR_INTERN` if the table is full (16 Mi requests in flight).
    #[inline]
    pub(crate) fn add_request(&self, obj: ReqObj) -> Res<usize> {
        self.requests()
            .with(|t| t.insert(obj))?
            .ok_or_else(|| Fail::new(MPI_ERR_INTERN, "too many requests in flight"))
    }
}
