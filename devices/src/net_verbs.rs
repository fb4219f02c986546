//! Building the verbs device from the configuration (feature `verbs`).

use ferry_core::{Bootstrap, Rank};

use crate::error::{Result, SetupError};

/// Sets up the verbs device for `peers` (collective over every rank that has
/// a peer on verbs; see `ferry_verbs`'s crate docs).
pub(crate) fn verbs_device(
    boot: &mut dyn Bootstrap,
    peers: &[Rank],
) -> Result<ferry_verbs::VerbsDevice> {
    let opts =
        ferry_verbs::VerbsOptions::from_env().map_err(|e| SetupError::Verbs(e.to_string()))?;
    ferry_verbs::VerbsDevice::new(boot, peers, opts)
        .map_err(|e| SetupError::Verbs(e.to_string()).into())
}
