//! The kit's own devices: the loopback and the simulation network, checked
//! against every clause.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use super::{DeviceKit, Expect, Setup, Wake};
use crate::device::Caps;
use crate::loopback::Loopback;
use crate::sim::{NetConfig, Network, SimDevice};

/// The loopback: a job of one rank.
struct LoopbackKit;

impl DeviceKit for LoopbackKit {
    type Device = Loopback;

    fn expect(&self) -> Expect {
        Expect {
            max_ranks: 1,
            rdma: true,
            // Only its own calls create events: nothing to wake.
            wake: Wake::None,
            hands_over: true,
        }
    }

    fn devices(&mut self, n: usize, setup: Setup) -> Option<Vec<Loopback>> {
        assert_eq!(n, 1, "a loopback job has one rank");
        let dev = match setup {
            Setup::Default => Loopback::new(0),
            Setup::Bounded => Loopback::new(0).with_capacity_limit(4),
            Setup::NoRdma => Loopback::with_caps(
                0,
                Caps {
                    rdma_get: false,
                    rdma_put: false,
                    ..Loopback::DEFAULT_CAPS
                },
            ),
            Setup::FailFast => return None,
        };
        Some(vec![dev])
    }

    fn woken(&self, _: &[Loopback], _: usize, _: Duration) -> bool {
        false
    }
}

mod loopback {
    crate::device_contract_tests!(super::LoopbackKit);
}

/// The simulation network, with its default delays and random order.
#[derive(Default)]
struct SimKit {
    net: Option<Rc<RefCell<Network>>>,
}

impl DeviceKit for SimKit {
    type Device = SimDevice;

    fn expect(&self) -> Expect {
        Expect {
            max_ranks: 8,
            rdma: true,
            wake: Wake::Flag,
            hands_over: true,
        }
    }

    fn devices(&mut self, n: usize, setup: Setup) -> Option<Vec<SimDevice>> {
        let config = NetConfig::new(n);
        let config = match setup {
            Setup::Default | Setup::FailFast => config,
            Setup::Bounded => config.with_link_capacity(4),
            Setup::NoRdma => config.with_caps(Caps {
                rdma_get: false,
                rdma_put: false,
                ..NetConfig::DEFAULT_CAPS
            }),
        };
        let net = Network::new(config);
        let devices = Network::devices(&net);
        self.net = Some(net);
        Some(devices)
    }

    fn tick(&mut self, _: &mut [SimDevice]) {
        if let Some(net) = &self.net {
            net.borrow_mut().advance();
        }
    }

    fn woken(&self, _: &[SimDevice], rank: usize, _: Duration) -> bool {
        self.net
            .as_ref()
            .is_some_and(|n| n.borrow().is_woken(rank as crate::Rank))
    }

    fn kill_last(&mut self, devices: &mut Vec<SimDevice>) -> bool {
        let last = devices.len() - 1;
        if let Some(net) = &self.net {
            net.borrow_mut().kill(last as crate::Rank);
        }
        devices.pop();
        true
    }
}

mod sim {
    crate::device_contract_tests!(super::SimKit::default());
}
