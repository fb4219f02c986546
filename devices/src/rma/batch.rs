//! Batching at the origin, on windows reached by messages: puts and
//! accumulates to one target wait in a buffer of their own
//! ([`ferry_core::rma::Kind::Batch`]) until something must follow them to
//! that target (a fetching operation, a lock request, an unlock, a flush,
//! a complete notice, a fence), or the buffer fills. An epoch of many small
//! puts is then a few messages instead of one each: the target's engine
//! applies them in one go, and a target that sleeps between messages is
//! woken a few times instead of once per operation. A batched operation
//! is complete locally when it is in the buffer (its data is copied), so
//! its request is `REQUEST_EMPTY`.

use ferry_core::rma::wire::HEADER_LEN;
use ferry_core::rma::{Kind, Request as Wire, REQUEST_TAG};
use ferry_core::{Buf, Rank, SendMode, UsageError};

use super::{Origin, Window};
use crate::error::Result;
use crate::request::Request;
use crate::typed::{origin_of, Element};

/// A batch is sent once it holds this many bytes.
const BATCH_LIMIT: usize = 16 << 10;
/// Requests longer than this go alone.
const ONE_LIMIT: usize = 4 << 10;

/// One target's batch: a header's room, then whole requests.
#[derive(Debug, Default)]
pub(super) struct Batch {
    buf: Vec<u8>,
    count: u64,
}

impl<T: Element> Window<T> {
    /// Adds `wire` with `data` to `target`'s batch if it is a put or an
    /// accumulate short enough; false if it must go alone.
    pub(super) fn enqueue(
        &self,
        o: &mut Origin,
        target: Rank,
        wire: &Wire,
        data: &[u8],
    ) -> Result<bool> {
        let batchable = matches!(wire.kind, Kind::Put | Kind::Accumulate) && !wire.scattered;
        if !batchable || data.len() + HEADER_LEN > ONE_LIMIT {
            return Ok(false);
        }
        let b = &mut o.batches[target as usize];
        if b.buf.is_empty() {
            b.buf.reserve(BATCH_LIMIT + ONE_LIMIT);
            b.buf.resize(HEADER_LEN, 0);
        }
        wire.encode_into(&mut b.buf, data)
            .map_err(UsageError::Unsupported)?;
        b.count += 1;
        o.sent[target as usize] += 1;
        if b.buf.len() >= BATCH_LIMIT {
            self.flush_batch(o, target)?;
        }
        Ok(true)
    }

    /// Sends `target`'s batch, if it holds anything.
    pub(super) fn flush_batch(&self, o: &mut Origin, target: Rank) -> Result<()> {
        let Some(b) = o.batches.get_mut(target as usize) else {
            return Ok(());
        };
        if b.count == 0 {
            return Ok(());
        }
        let mut msg = std::mem::take(&mut b.buf);
        Wire::seal_batch(&mut msg, std::mem::take(&mut b.count));
        // The send completes on its own; its request is not needed.
        drop(self.comm.isend_buf(
            Buf::from_vec(msg),
            origin_of::<u8>(),
            target,
            REQUEST_TAG,
            SendMode::Standard,
        )?);
        Ok(())
    }

    /// Sends every target's batch (a fence, a free).
    pub(super) fn flush_batches(&self, o: &mut Origin) -> Result<()> {
        for t in 0..o.batches.len() as Rank {
            self.flush_batch(o, t)?;
        }
        Ok(())
    }

    /// A request complete in its call (`REQUEST_EMPTY`).
    pub(super) fn done(&self) -> Request {
        self.ready::<u8>(None)
    }
}
