//! The device contract, checked by ferry-core's test kit on the RDMA device
//! of this machine (Soft-RoCE in the VM of `ci/verbs.sh`). Without one each
//! check skips, unless `FERRY_VERBS_REQUIRE=1`.

use std::time::Duration;

use ferry_core::testkit::{DeviceKit, Expect, Setup, Wake};

use super::{devices, poll_in, rdma_present, small};
use crate::{VerbsDevice, VerbsOptions};

/// Builds verbs devices for the kit.
pub(crate) struct VerbsKit;

impl DeviceKit for VerbsKit {
    type Device = VerbsDevice;

    fn expect(&self) -> Expect {
        Expect {
            max_ranks: 8,
            rdma: true,
            wake: Wake::Fd,
            hands_over: true,
        }
    }

    fn available(&self, check: &str) -> bool {
        rdma_present(check)
    }

    fn devices(&mut self, n: usize, setup: Setup) -> Option<Vec<VerbsDevice>> {
        let opts = match setup {
            Setup::Default => VerbsOptions::default(),
            // 4 credits per peer.
            Setup::Bounded => small(),
            // Every QP has RDMA READ and WRITE.
            Setup::NoRdma => return None,
            // Short timeouts (~67 ms × 4 tries) and keepalives every 200 ms,
            // so that a rank that sends nothing notices too.
            Setup::FailFast => VerbsOptions {
                timeout: 14,
                retry: 3,
                keepalive_ms: 200,
                ..small()
            },
        };
        Some(devices(n as u32, opts))
    }

    fn woken(&self, devices: &[VerbsDevice], rank: usize, timeout: Duration) -> bool {
        poll_in(&devices[rank], timeout.as_millis() as i32)
    }
}

ferry_core::device_contract_tests!(VerbsKit);
