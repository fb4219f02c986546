//! The bootstrap a job starts with: a PMI client when a PMI server
//! (`ferryrun`, Hydra) launched the process, nothing for a singleton.

use ferry_core::BootstrapError;

use crate::error::Result;
use ferry_pmi::PmiClient;

/// The bootstrap a job was started with, kept until finalize.
#[derive(Debug)]
pub(crate) enum Boot {
    /// Launched by a PMI server (`None` once finalized).
    Pmi(Option<PmiClient>),
    /// Started on its own: a job of one.
    Singleton,
}

/// The PMI client if a PMI server launched this process.
///
/// # Errors
/// The launcher's variables are set but the server cannot be reached or
/// answers badly.
pub(crate) fn from_env() -> Result<Option<PmiClient>> {
    Ok(PmiClient::from_env()?)
}

/// The key-value space of a job of one, so that devices that set up through
/// a bootstrap (shm) also serve a singleton (`FERRY_DEVICE=shm` without a
/// launcher).
#[derive(Debug)]
pub(crate) struct SingletonBoot {
    job_id: String,
    kvs: std::collections::HashMap<String, String>,
}

impl SingletonBoot {
    pub(crate) fn new() -> SingletonBoot {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        SingletonBoot {
            job_id: format!("single{}x{nanos:x}", std::process::id()),
            kvs: std::collections::HashMap::new(),
        }
    }
}

impl ferry_core::Bootstrap for SingletonBoot {
    fn rank(&self) -> ferry_core::Rank {
        0
    }
    fn size(&self) -> u32 {
        1
    }
    fn job_id(&self) -> &str {
        &self.job_id
    }
    fn put(&mut self, key: &str, value: &str) -> std::result::Result<(), BootstrapError> {
        self.kvs.insert(key.to_owned(), value.to_owned());
        Ok(())
    }
    fn get(&mut self, key: &str) -> std::result::Result<String, BootstrapError> {
        self.kvs
            .get(key)
            .cloned()
            .ok_or_else(|| BootstrapError::NotFound(key.to_owned()))
    }
    fn barrier(&mut self) -> std::result::Result<(), BootstrapError> {
        Ok(())
    }
}
