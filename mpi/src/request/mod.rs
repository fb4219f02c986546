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
#[allow(unsafe_code)]
pub(crate) mod post;
pub(crate) mod waiting;

pub(crate) use object::ReqObj;
