//! The shared-memory device for this node's ranks (feature `shm`). Its
//! settings are `ferry_shm::ShmOptions`'s `FERRY_SHM_*` variables, read
//! there and only there (the CMA probe included).

use ferry_core::{Bootstrap, Rank};
use ferry_shm::{ShmDevice, ShmOptions};

use super::node::{NodeDevice, SleepOn};
use crate::error::{Result, SetupError};

impl SleepOn for ShmDevice {}

/// This build has the device.
pub(super) fn compiled() -> Result<()> {
    Ok(())
}

/// The shm device over `local`, this node's ranks (collective over them).
pub(super) fn device(boot: &mut dyn Bootstrap, local: &[Rank]) -> Result<ShmDevice> {
    let opts = ShmOptions::from_env().map_err(SetupError::Shm)?;
    Ok(ShmDevice::new(boot, local, opts).map_err(SetupError::Shm)?)
}

/// [`device`], as the engine's device.
pub(super) fn node_device(boot: &mut dyn Bootstrap, local: &[Rank]) -> Result<NodeDevice> {
    Ok(NodeDevice::Shm(device(boot, local)?))
}
