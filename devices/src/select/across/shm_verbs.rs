//! Across nodes with `shm` and `verbs` built: shared memory on the node,
//! verbs beyond it (verbs is preferred when both network devices are built).

use super::node::NodeDevice::ShmVerbs as join;
use super::verbs as net;
include!("shm_net.rs");
