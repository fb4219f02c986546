//! PMI-2, as Slurm's `srun --mpi=pmi2` serves it.
//!
//! The client opens with the PMI-1 line `cmd=init pmi_version=2
//! pmi_subversion=0` and, once the server agrees, switches to
//! length-prefixed `cmd=NAME;key=value;...` messages on the same
//! connection ([`wire`]); [`reply`] checks each reply strictly. The private
//! `client` module drives the exchange for [`crate::PmiClient`].

pub(crate) mod client;
pub mod reply;
pub mod wire;
