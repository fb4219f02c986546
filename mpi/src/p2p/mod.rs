//! Point-to-point communication (MPI 4.1 chapter 3): the send modes,
//! receives, probes (matched ones too), sendrecv, persistent and
//! partitioned requests,
//! buffered mode and its attached buffers, statuses, and their large-count
//! (`_c`) forms.

pub(crate) mod bsend;
pub(crate) mod commbuf;
#[cfg(test)]
mod large;
pub(crate) mod messages;
pub(crate) mod mprobe;
pub(crate) mod pair;
pub(crate) mod partitioned;
pub(crate) mod persist;
pub(crate) mod probe;
pub(crate) mod status;
