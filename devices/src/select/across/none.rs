//! Across nodes without shared memory and a network device both built: a
//! typed error that says what to rebuild with.

use ferry_core::Rank;
use ferry_pmi::PmiClient;

use super::node::NodeDevice;
use crate::error::{Result, SetupError};

/// Always [`SetupError::NetworkDeviceNeeded`].
pub(super) fn device(
    _boot: &mut PmiClient,
    _local: &[Rank],
    on_node: &[bool],
    remote: &[Rank],
) -> Result<NodeDevice> {
    Err(SetupError::NetworkDeviceNeeded {
        remote: remote.len(),
        size: on_node.len() as u32,
    }
    .into())
}
