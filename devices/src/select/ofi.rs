//! The libfabric device (feature `ofi`). Its settings are
//! `ferry_ofi::OfiOptions`'s `FERRY_OFI_*` variables.

use ferry_core::{Bootstrap, Rank};
use ferry_ofi::{OfiDevice, OfiOptions};

use super::node::{NodeDevice, SleepOn};
use crate::error::{Result, SetupError};

impl SleepOn for OfiDevice {}

/// This build has the device.
pub(super) fn compiled() -> Result<()> {
    Ok(())
}

/// The ofi device for `peers` (collective over every rank that has a peer
/// on ofi; see `ferry_ofi`'s crate docs).
pub(super) fn device(boot: &mut dyn Bootstrap, peers: &[Rank]) -> Result<OfiDevice> {
    let opts = OfiOptions::from_env().map_err(SetupError::Ofi)?;
    Ok(OfiDevice::new(boot, peers, opts).map_err(SetupError::Ofi)?)
}

/// [`device`], as the engine's device.
pub(super) fn node_device(boot: &mut dyn Bootstrap, peers: &[Rank]) -> Result<NodeDevice> {
    Ok(NodeDevice::Ofi(device(boot, peers)?))
}
