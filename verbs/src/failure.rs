//! Peer failure on the verbs device: marking a peer failed once, what a
//! failed work completion or an asynchronous event means for the peers,
//! and reporting each failure once through the sink.

use ferry_core::device::Sink;
use ferry_core::{DeviceError, Error, PeerError};

use crate::device::VerbsDevice;
use crate::ffi::{sys, AsyncEvent};

impl VerbsDevice {
    /// The peer at `i`, if alive; else its failure.
    #[inline]
    pub(crate) fn alive(&self, i: usize) -> Result<(), Error> {
        match self.failures.error(i) {
            None => Ok(()),
            Some(error) => Err(error),
        }
    }

    /// Marks peer `i` failed (reported once by `progress`).
    pub(crate) fn fail(&mut self, i: usize, error: Error) {
        if self.failures.fail(i, error) {
            self.observer.rewatch_after_failure();
            let peer = self.peers[i].rank;
            tracing::warn!(rank = self.rank, peer, %error, "verbs peer failed");
        }
    }

    /// A work completion failed on peer `i`'s QP. In RC, any error moves the
    /// QP to the error state (the rest of its work flushes), so the
    /// connection is lost: retry-exceeded means the peer is dead or
    /// unreachable; anything else is a failed transfer.
    pub(crate) fn wc_failed(&mut self, i: usize, status: u32) {
        use sys::ibv_wc_status as S;
        let rank = self.peers[i].rank;
        let error = match status {
            S::IBV_WC_WR_FLUSH_ERR if !self.failures.is_alive(i) => return,
            S::IBV_WC_RETRY_EXC_ERR | S::IBV_WC_RNR_RETRY_EXC_ERR | S::IBV_WC_WR_FLUSH_ERR => {
                PeerError::Died { rank }
            }
            _ => PeerError::TransferFailed { rank },
        };
        let newly = self.failures.is_alive(i);
        self.fail(i, error.into());
        if newly && matches!(error, PeerError::Died { .. }) {
            self.announce(i);
        }
    }

    /// Reads the device's asynchronous events; those that break the path
    /// to peers fail them with [`DeviceError::Event`] (reported once, by
    /// `progress`): the port going down or the device failing fails every
    /// peer, a queue pair failing fails its peer.
    pub(crate) fn take_async_events(&mut self) {
        loop {
            let ev = match self.sel.ctx.try_async_event() {
                Ok(Some(ev)) => ev,
                Ok(None) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "verbs: could not read async events");
                    return;
                }
            };
            let (failed, code) = match ev {
                AsyncEvent::PortDown(port) => (
                    (port == self.sel.port).then_some(None),
                    sys::ibv_event_type::IBV_EVENT_PORT_ERR as u32,
                ),
                AsyncEvent::Fatal(code) => (Some(None), code),
                AsyncEvent::QpFailed { qpn, event } => {
                    let peer = self.index.of_qpn(qpn);
                    (peer.map(Some), event)
                }
                AsyncEvent::PortActive(_) | AsyncEvent::Other(_) => (None, 0),
            };
            tracing::info!(rank = self.rank, event = ?ev, "verbs async event");
            let error: Error = DeviceError::Event {
                what: ev.name(),
                event: code,
            }
            .into();
            match failed {
                Some(Some(i)) => self.fail(i, error),
                Some(None) => (0..self.peers.len()).for_each(|i| self.fail(i, error)),
                None => {}
            }
        }
    }

    pub(crate) fn report_failures<S: Sink>(&mut self, sink: &mut S) -> usize {
        let mut events = 0;
        while let Some((i, error)) = self.failures.take_unreported() {
            sink.peer_failed(self.peers[i].rank, error);
            events += 1;
        }
        events
    }
}
