//! Point-to-point communication (MPI 4.1 chapter 3): the send modes,
//! receives, probes (matched ones too), sendrecv, persistent requests,
//! buffered mode and its attached buffers, statuses, and their large-count
//! (`_c`) forms.

#[allow(unsafe_code)]
pub(crate) mod bsend;
pub(crate) mod commbuf;
#[cfg(test)]
mod large;
#[allow(unsafe_code)]
pub(crate) mod messages;
#[allow(unsafe_code)]
pub(crate) mod mprobe;
#[allow(unsafe_code)]
pub(crate) mod pair;
#[allow(unsafe_code)]
pub(crate) mod persist;
pub(crate) mod probe;
pub(crate) mod status;
