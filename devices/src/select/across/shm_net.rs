// The body of the `across/` module of each pair of devices, included after
// it names the network module as `net` and the `NodeDevice` variant that
// holds the pair as `join`.

use ferry_core::Rank;
use ferry_pmi::PmiClient;

use super::mixed::Mixed;
use super::shm;
use crate::error::Result;

/// Shared memory for `local`, then the network device for `remote` (both
/// collective, in this order on every rank), as one device.
pub(super) fn device(
    boot: &mut PmiClient,
    local: &[Rank],
    on_node: &[bool],
    remote: &[Rank],
) -> Result<super::node::NodeDevice> {
    let node = shm::device(boot, local)?;
    let net = net::device(boot, remote)?;
    Ok(join(Mixed::new(node, net, on_node)))
}
