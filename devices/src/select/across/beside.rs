//! The one way to join shared memory and a network device, for the
//! `across` file of whichever network device is built.

use ferry_core::device::Device;
use ferry_core::{Bootstrap, Rank};
use ferry_shm::ShmDevice;

use super::super::mixed::Mixed;
use super::super::node::NodeDevice;
use super::super::shm;
use crate::error::Result;

/// Shared memory for `local`, then the network device `net` for `remote`,
/// joined into one device by `wrap` (`NodeDevice::ShmOfi`, ...).
pub(super) fn beside<N: Device>(
    boot: &mut dyn Bootstrap,
    local: &[Rank],
    on_node: &[bool],
    remote: &[Rank],
    net: impl FnOnce(&mut dyn Bootstrap, &[Rank]) -> Result<N>,
    wrap: fn(Mixed<ShmDevice, N>) -> NodeDevice,
) -> Result<NodeDevice> {
    let node = shm::device(boot, local)?;
    let net = net(boot, remote)?;
    Ok(wrap(Mixed::new(node, net, on_node)))
}
