//! The InfiniBand / RoCE verbs device (feature `verbs`). Its settings are
//! `ferry_verbs::VerbsOptions`'s `FERRY_VERBS_*` variables.

use ferry_core::{Bootstrap, Rank};
use ferry_verbs::{VerbsDevice, VerbsOptions};

use super::node::{NodeDevice, SleepOn};
use crate::error::{Result, SetupError};

impl SleepOn for VerbsDevice {}

/// This build has the device.
pub(super) fn compiled() -> Result<()> {
    Ok(())
}

/// The verbs device for `peers` (collective over every rank that has a
/// peer on verbs; see `ferry_verbs`'s crate docs).
pub(super) fn device(boot: &mut dyn Bootstrap, peers: &[Rank]) -> Result<VerbsDevice> {
    let opts = VerbsOptions::from_env().map_err(SetupError::Verbs)?;
    Ok(VerbsDevice::new(boot, peers, opts).map_err(SetupError::Verbs)?)
}

/// [`device`], as the engine's device.
pub(super) fn node_device(boot: &mut dyn Bootstrap, peers: &[Rank]) -> Result<NodeDevice> {
    Ok(NodeDevice::Verbs(device(boot, peers)?))
}
