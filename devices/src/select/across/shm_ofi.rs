//! Across nodes with `shm` and `ofi` built (and not `verbs`): shared memory
//! on the node, libfabric beyond it.

use ferry_core::Rank;
use ferry_pmi::PmiClient;

use super::node::NodeDevice;
use super::ofi;
use crate::error::Result;

#[path = "beside.rs"]
mod beside;

/// See [`across_nodes`](super::across_nodes).
pub(super) fn device(
    boot: &mut PmiClient,
    local: &[Rank],
    on_node: &[bool],
    remote: &[Rank],
) -> Result<NodeDevice> {
    beside::beside(
        boot,
        local,
        on_node,
        remote,
        ofi::device,
        NodeDevice::ShmOfi,
    )
}
