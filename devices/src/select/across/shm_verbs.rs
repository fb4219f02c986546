//! Across nodes with `shm` and `verbs` built: shared memory on the node,
//! verbs beyond it (verbs is preferred when both network devices are built).

use ferry_core::Rank;
use ferry_pmi::PmiClient;

use super::node::NodeDevice;
use super::verbs;
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
        verbs::device,
        NodeDevice::ShmVerbs,
    )
}
