//! Across nodes with `shm` and `ofi` built (and not `verbs`): shared memory
//! on the node, libfabric beyond it.

use super::node::NodeDevice::ShmOfi as join;
use super::ofi as net;
include!("shm_net.rs");
