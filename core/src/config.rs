//! Engine configuration: thresholds and limits, chosen once at setup.
//!
//! `ferry` fills this from `FERRY_*` environment variables; core never reads
//! the environment.

/// How large messages move once they leave the eager range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RndvMode {
    /// RDMA get where the device has it, else put, else fragments.
    Auto,
    /// Receiver-side RDMA read (falls back to fragments without `rdma_get`).
    Get,
    /// Sender-side RDMA write (falls back to fragments without `rdma_put`).
    Put,
    /// Always the fragmented copy protocol.
    Fragmented,
}

/// Which complete request `testany`, `waitany` and `get_status_any` report
/// when several are complete (MPI lets the implementation choose).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AnyOrder {
    /// Scan from a rotating start, so that repeated calls over one list
    /// report every complete request in turn (none starves).
    #[default]
    Rotating,
    /// The lowest complete index, as MPICH and Open MPI report (and as
    /// programs written against them, mpi4py's tests among them, expect).
    Lowest,
}

/// Engine settings. [`Config::default`] suits shared memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Messages of at most this many bytes go eager (clamped to the device's
    /// `max_payload`). `None`: the device's own
    /// [`Caps::eager_preferred`](crate::Caps::eager_preferred).
    pub eager_limit: Option<usize>,
    /// Rendezvous messages of at least this many bytes use RDMA (get or put);
    /// smaller ones use fragments. `0` means "always RDMA when available".
    pub rdma_threshold: usize,
    /// Which rendezvous protocol to prefer.
    pub rndv_mode: RndvMode,
    /// Fragment size for the fragmented protocol (clamped to `max_payload`).
    pub fragment_size: usize,
    /// Eager credits per peer: how many eager messages a sender may have
    /// outstanding at a receiver before it must wait for credits to return
    /// (further messages then go by rendezvous, which buffers nothing). This
    /// bounds unexpected eager memory at a receiver to
    /// `peers × eager_credits × eager limit` bytes.
    pub eager_credits: u32,
    /// Receives may return [`Request::EMPTY`](crate::Request::EMPTY) when they
    /// complete inside the initiating call (the proposal's
    /// `mpi_recv_req_may_be_empty`); their status is then lost.
    pub recv_may_be_empty: bool,
    /// Largest message the engine sends or accepts: a larger send is
    /// [`UsageError::MessageTooLarge`](crate::UsageError::MessageTooLarge),
    /// and a peer's rendezvous header announcing more is a protocol
    /// violation. 1 TiB by default: no real message is refused (MPICH's
    /// `large_message` sends 2.2 GB), only a corrupted length.
    pub max_message: usize,
    /// Largest message an ARecv allocates its buffer for (the one size a
    /// peer's header makes this process allocate): a larger one completes
    /// the ARecv with [`UsageError::MessageTooLarge`](crate::UsageError::MessageTooLarge)
    /// and moves no data. 4 GiB by default.
    pub max_arecv: usize,
    /// Which complete request the `any` forms report.
    pub any_order: AnyOrder,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            eager_limit: None,
            rdma_threshold: 0,
            rndv_mode: RndvMode::Auto,
            fragment_size: 64 * 1024,
            eager_credits: 64,
            recv_may_be_empty: false,
            max_message: 1 << 40,
            max_arecv: 1 << 32,
            any_order: AnyOrder::Rotating,
        }
    }
}
