//! [`Limits`]: the sizes the device settled at setup from the hardware's
//! attributes and the options, fixed for its life.

/// What setup chose; read on the paths that size queues and packets.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Packets up to this many bytes (header + payload) go inline.
    max_inline: usize,
    /// Largest RDMA work request (the port's `max_msg_sz`); longer
    /// transfers are split (`rdma.rs`).
    max_msg: usize,
    /// Send-queue depth of each RC QP.
    sq_depth: u32,
    /// Signal one small inline send in this many (`signal.rs`).
    signal_every: u32,
    /// Receive buffers (and CQ entries) per connected peer: `C + RESERVE`.
    per_peer: u32,
    /// Connections the SRQ has room for.
    max_connected: u32,
    /// The device's largest CQ.
    max_cqe: u32,
}

impl Limits {
    /// The limits setup chose (see `setup.rs` for how).
    pub(crate) fn new(
        max_inline: usize,
        max_msg: usize,
        sq_depth: u32,
        signal_every: u32,
        per_peer: u32,
        max_connected: u32,
        max_cqe: u32,
    ) -> Limits {
        Limits {
            max_inline,
            max_msg,
            sq_depth,
            signal_every: signal_every.max(1),
            per_peer,
            max_connected,
            max_cqe,
        }
    }

    /// Packets up to this many bytes go inline.
    #[inline]
    pub(crate) fn max_inline(&self) -> usize {
        self.max_inline
    }

    /// The largest RDMA work request.
    #[inline]
    pub(crate) fn max_msg(&self) -> usize {
        self.max_msg
    }

    /// Splits RDMA transfers at `max_msg` bytes instead (tests).
    #[cfg(test)]
    pub(crate) fn set_max_msg(&mut self, max_msg: usize) {
        self.max_msg = max_msg;
    }

    /// Each RC QP's send-queue depth.
    #[inline]
    pub(crate) fn sq_depth(&self) -> u32 {
        self.sq_depth
    }

    /// One small inline send in this many is signaled.
    #[inline]
    pub(crate) fn signal_every(&self) -> u32 {
        self.signal_every
    }

    /// Receive buffers per connected peer.
    #[inline]
    pub(crate) fn per_peer(&self) -> u32 {
        self.per_peer
    }

    /// Connections the SRQ has room for.
    pub(crate) fn max_connected(&self) -> u32 {
        self.max_connected
    }

    /// The device's largest CQ.
    pub(crate) fn max_cqe(&self) -> u32 {
        self.max_cqe
    }
}
