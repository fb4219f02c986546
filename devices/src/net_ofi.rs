//! Building the libfabric device from the configuration (feature `ofi`).

use ferry_core::{Bootstrap, Rank};

use crate::error::{Result, SetupError};

/// Sets up the ofi device for `peers` (collective over every rank that has
/// a peer on ofi; see `ferry_ofi`'s crate docs).
pub(crate) fn ofi_device(boot: &mut dyn Bootstrap, peers: &[Rank]) -> Result<ferry_ofi::OfiDevice> {
    let opts = ferry_ofi::OfiOptions::from_env().map_err(|e| SetupError::Ofi(e.to_string()))?;
    ferry_ofi::OfiDevice::new(boot, peers, opts).map_err(|e| SetupError::Ofi(e.to_string()).into())
}
