//! The bootstrap interface: how a process learns its rank and exchanges
//! small values (addresses, segment names) with the rest of the job.
//!
//! The `ferry-pmi` crate implements it over the PMI-1 and PMI-2 wire
//! protocols (served by `ferryrun`, MPICH's Hydra or Slurm's `srun
//! --mpi=pmi2`); `ferry` also has a singleton's in-process one. Devices take
//! a `&mut dyn Bootstrap` at setup so that they need not know which
//! launcher started the job. Core itself only defines the trait (and
//! [`ThreadBoot`], threads of one process standing in for ranks): it does
//! no I/O.

use crate::envelope::Rank;

/// Errors a bootstrap reports (kept separate from [`crate::Error`]: they
/// happen before any engine exists).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BootstrapError {
    /// The launcher (or its socket) could not be reached or went away.
    #[error("bootstrap I/O failed: {0}")]
    Io(String),
    /// The launcher sent something that is not valid protocol.
    #[error("malformed reply from the launcher: {0}")]
    Protocol(String),
    /// The launcher answered with an error.
    #[error("launcher refused {op}: {reason}")]
    Refused {
        /// The operation.
        op: &'static str,
        /// The launcher's reason.
        reason: String,
    },
    /// A key was not found.
    #[error("key {0:?} not found in the job's key-value space")]
    NotFound(String),
    /// A key or value is too long or contains characters the protocol
    /// cannot carry.
    #[error("invalid key or value: {0}")]
    Invalid(String),
}

/// A job-wide key-value space with a barrier (the PMI-1 model).
///
/// The protocol's rule, which every implementation keeps: values `put`
/// before a `barrier` are visible to every rank's `get` after it.
pub trait Bootstrap: std::fmt::Debug {
    /// This process's rank.
    fn rank(&self) -> Rank;
    /// The number of processes in the job.
    fn size(&self) -> u32;
    /// A name unique to this job (PMI's kvsname), usable in resource names.
    fn job_id(&self) -> &str;
    /// Publishes `value` under `key`.
    ///
    /// # Errors
    /// See [`BootstrapError`].
    fn put(&mut self, key: &str, value: &str) -> Result<(), BootstrapError>;
    /// Reads the value published under `key`.
    ///
    /// # Errors
    /// See [`BootstrapError`].
    fn get(&mut self, key: &str) -> Result<String, BootstrapError>;
    /// Waits until every rank has called `barrier`.
    ///
    /// # Errors
    /// See [`BootstrapError`].
    fn barrier(&mut self) -> Result<(), BootstrapError>;
}

/// A bootstrap for ranks that are threads of one process: a shared map and
/// a barrier. Device tests and benches use it to set up several devices in
/// one process, each on its own thread (setup is collective).
#[derive(Debug, Clone)]
pub struct ThreadBoot {
    rank: Rank,
    size: u32,
    job: String,
    kvs: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, String>>>,
    barrier: std::sync::Arc<std::sync::Barrier>,
    mangle: Option<fn(&str, String) -> String>,
}

impl ThreadBoot {
    /// One bootstrap per rank of a `size`-rank job named `job`; move each to
    /// its own thread.
    pub fn group(size: u32, job: &str) -> Vec<ThreadBoot> {
        let kvs = std::sync::Arc::default();
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(size as usize));
        (0..size as Rank)
            .map(|rank| ThreadBoot {
                rank,
                size,
                job: job.to_owned(),
                kvs: std::sync::Arc::clone(&kvs),
                barrier: std::sync::Arc::clone(&barrier),
                mangle: None,
            })
            .collect()
    }

    /// Rewrites every value this rank publishes with `f(key, value)`: a
    /// test's way to fake a broken or hostile peer.
    #[must_use]
    pub fn mangled(mut self, f: fn(&str, String) -> String) -> Self {
        self.mangle = Some(f);
        self
    }

    fn map(
        &self,
    ) -> Result<std::sync::MutexGuard<'_, std::collections::HashMap<String, String>>, BootstrapError>
    {
        self.kvs
            .lock()
            .map_err(|_| BootstrapError::Io("a rank thread panicked holding the map".into()))
    }
}

impl Bootstrap for ThreadBoot {
    fn rank(&self) -> Rank {
        self.rank
    }
    fn size(&self) -> u32 {
        self.size
    }
    fn job_id(&self) -> &str {
        &self.job
    }
    fn put(&mut self, key: &str, value: &str) -> Result<(), BootstrapError> {
        let value = match self.mangle {
            Some(f) => f(key, value.to_owned()),
            None => value.to_owned(),
        };
        self.map()?.insert(key.to_owned(), value);
        Ok(())
    }
    fn get(&mut self, key: &str) -> Result<String, BootstrapError> {
        self.map()?
            .get(key)
            .cloned()
            .ok_or_else(|| BootstrapError::NotFound(key.to_owned()))
    }
    fn barrier(&mut self) -> Result<(), BootstrapError> {
        self.barrier.wait();
        Ok(())
    }
}
