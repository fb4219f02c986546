//! The device contract, checked by ferry-core's test kit: the shm device on
//! threads of one process (each "rank" with its own mapping of the segment).

use std::time::Duration;

use ferry_core::testkit::{DeviceKit, Expect, Setup, Wake};

use super::{devices, readable, small};
use crate::{ShmDevice, ShmOptions};

/// Builds shm devices for the kit.
pub(crate) struct ShmKit;

impl DeviceKit for ShmKit {
    type Device = ShmDevice;

    fn expect(&self) -> Expect {
        Expect {
            max_ranks: 8,
            // CMA works on this machine (the setup probe keeps it on).
            rdma: true,
            wake: Wake::Fd,
            hands_over: true,
        }
    }

    fn devices(&mut self, n: usize, setup: Setup) -> Option<Vec<ShmDevice>> {
        let opts = match setup {
            Setup::Default | Setup::FailFast => ShmOptions::default(),
            // Cells only, 8 per rank.
            Setup::Bounded => small(),
            Setup::NoRdma => ShmOptions {
                cma: false,
                ..ShmOptions::default()
            },
        };
        Some(devices(n as u32, opts, "kit"))
    }

    fn woken(&self, devices: &[ShmDevice], rank: usize, timeout: Duration) -> bool {
        readable(&devices[rank], timeout.as_millis() as i32)
    }

    /// A rank's death is noticed by its pidfd, and threads share one pid:
    /// `tests/` kills real processes instead.
    fn kill_last(&mut self, _: &mut Vec<ShmDevice>) -> bool {
        false
    }
}

ferry_core::device_contract_tests!(ShmKit);
