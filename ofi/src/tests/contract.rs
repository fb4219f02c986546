//! The device contract, checked by ferry-core's test kit on each provider
//! CI runs: `tcp;ofi_rxm` and `shm` here, and `verbs;ofi_rxm` in the
//! Soft-RoCE VM of `ci/verbs.sh` (elsewhere its checks skip; see `rdma`).

use std::time::Duration;

use ferry_core::device::Device;
use ferry_core::testkit::{DeviceKit, Expect, Setup, Wake};

use super::{devices, opts, readable};
use crate::{OfiDevice, OfiOptions};

/// Builds ofi devices on one provider.
pub(crate) struct OfiKit {
    provider: &'static str,
}

impl DeviceKit for OfiKit {
    type Device = OfiDevice;

    fn expect(&self) -> Expect {
        Expect {
            max_ranks: 8,
            // Every provider here has FI_RMA.
            rdma: true,
            // rxm (over tcp or verbs) gives FI_WAIT_FD; shm (libfabric
            // 1.17) refuses it, so its owner polls.
            wake: if self.provider.ends_with("ofi_rxm") {
                Wake::Fd
            } else {
                Wake::None
            },
            hands_over: true,
        }
    }

    fn available(&self, check: &str) -> bool {
        self.provider != super::rdma::PROVIDER || super::rdma::present(check).is_some()
    }

    fn devices(&mut self, n: usize, setup: Setup) -> Option<Vec<OfiDevice>> {
        let o = match setup {
            Setup::Default | Setup::FailFast => opts(self.provider),
            Setup::Bounded => OfiOptions {
                send_buffers: 4,
                ..opts(self.provider)
            },
            Setup::NoRdma => OfiOptions {
                rma: false,
                ..opts(self.provider)
            },
        };
        Some(devices(n as u32, o, "kit"))
    }

    fn woken(&self, devices: &[OfiDevice], rank: usize, timeout: Duration) -> bool {
        let fd = devices[rank].wait_fd().expect("a wait fd");
        readable(fd, timeout.as_millis() as i32)
    }
}

mod tcp {
    ferry_core::device_contract_tests!(super::OfiKit {
        provider: "tcp;ofi_rxm"
    });
}

mod shm {
    ferry_core::device_contract_tests!(super::OfiKit { provider: "shm" });
}

mod verbs_rxm {
    ferry_core::device_contract_tests!(super::OfiKit {
        provider: super::super::rdma::PROVIDER
    });
}
