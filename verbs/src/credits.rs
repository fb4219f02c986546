//! Eager flow control: per-peer credits over the shared receive queue.
//!
//! # Why no message can ever find the SRQ empty (no RNR, bounded memory)
//! The SRQ holds `connected × (C + RESERVE)` posted buffers, `C` =
//! `FERRY_VERBS_CREDITS`: connections are made on first use (`qp.rs`) and
//! each adds its chunk of `C + RESERVE` posted buffers (`srq.rs`) *before*
//! the peer can send on it, so the pool grows with the peers a rank talks
//! to, never with the job, and the argument below holds per connection. Towards each peer a rank may have at most `C`
//! data messages unaccounted for: it starts with `C` credits, spends one per
//! data message, and gets them back only when the receiver has *reposted*
//! the buffer the message used (the receiver reposts in the same `progress`
//! that consumed it: it either copies the payload out or swaps in a spare
//! buffer, see `srq.rs`). Invariant per ordered pair (X sends to Y):
//!
//! `avail_X + in_flight_data + owed_Y + credits_in_flight_to_X = C`
//!
//! Returned credits ride on every data message Y sends X (the immediate's
//! 16-bit field), or, when Y has nothing to send, on an explicit
//! credit-only message once `owed_Y >= ceil(C / 2)`. Credit-only messages
//! use no credit (otherwise a rank out of credits could never return any),
//! so they need a reserve: each carries at least `ceil(C / 2)` credits and
//! at most `C` credits can be in flight, so at most **2** are ever
//! unprocessed at Y → `RESERVE = 2` buffers per peer. So the number of
//! buffers a peer can consume at once is bounded by `C + 2`, whatever the
//! application does, and memory is bounded by the pool sizes at setup.
//!
//! The handshake's **hello** (`qp.rs`: the requester's first packet, a
//! credit-only message returning 0) uses a reserve buffer too, but it is
//! processed before the other side sends any data on the connection (that
//! side waits for it), so no credit owed by the requester, and hence no
//! credit message of its, can exist while the hello is unprocessed: the
//! bound of 2 stands.
//!
//! A sender without credit gets `Sent::Busy` and the engine retries after a
//! later `progress` (which is when credits arrive).

/// Buffers per peer for credit-only messages; see the module docs.
pub(crate) const RESERVE: u32 = 2;

/// Credit state towards and from one peer.
#[derive(Debug, Clone)]
pub(crate) struct Credits {
    /// Data messages this rank may still send to the peer.
    avail: u32,
    /// Buffers the peer's messages used that were reposted here and not yet
    /// reported back.
    owed: u32,
    /// `C`.
    limit: u32,
}

impl Credits {
    pub(crate) fn new(limit: u32) -> Credits {
        Credits {
            avail: limit,
            owed: 0,
            limit,
        }
    }

    /// Spends one credit for a data message; `false` = none left (Busy).
    #[inline]
    pub(crate) fn take(&mut self) -> bool {
        if self.avail == 0 {
            return false;
        }
        self.avail -= 1;
        true
    }

    /// Undoes [`Credits::take`] (the post failed).
    pub(crate) fn untake(&mut self) {
        self.avail += 1;
    }

    /// Credits the peer returned. `Err` if it returned more than it had
    /// (a protocol violation).
    #[inline]
    pub(crate) fn returned(&mut self, n: u16) -> Result<(), &'static str> {
        let avail = self.avail + u32::from(n);
        if avail > self.limit {
            return Err("verbs: peer returned more eager credits than it was lent");
        }
        self.avail = avail;
        Ok(())
    }

    /// One of the peer's data messages was consumed and its buffer reposted.
    #[inline]
    pub(crate) fn consumed(&mut self) {
        self.owed += 1;
    }

    /// Takes every owed credit to piggyback on an outgoing message.
    #[inline]
    pub(crate) fn take_owed(&mut self) -> u16 {
        let n = self.owed.min(u32::from(u16::MAX));
        self.owed -= n;
        n as u16
    }

    /// Puts back credits taken with [`Credits::take_owed`] (post failed).
    pub(crate) fn restore_owed(&mut self, n: u16) {
        self.owed += u32::from(n);
    }

    /// Whether an explicit credit message is due (see the module docs).
    #[inline]
    pub(crate) fn explicit_due(&self) -> bool {
        self.owed > 0 && self.owed >= self.limit.div_ceil(2)
    }

    /// Data messages that may still be sent (for tests and diagnostics).
    pub(crate) fn available(&self) -> u32 {
        self.avail
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Simulates X flooding Y while Y sends nothing back: X never has more
    /// than C messages outstanding, and Y never holds more than 2 explicit
    /// credit messages unprocessed (the reserve).
    #[test]
    fn a_one_way_flood_stays_within_credits_and_reserve() {
        let c = 5;
        let (mut x, mut y) = (Credits::new(c), Credits::new(c));
        let mut at_y = 0u32; // data messages at Y, not yet consumed
        let mut credit_msgs: Vec<u16> = Vec::new(); // in flight Y -> X
        let mut sent = 0;
        for step in 0..1000u32 {
            if x.take() {
                at_y += 1;
                sent += 1;
            }
            assert!(at_y <= c);
            // Y consumes some, sometimes.
            if step % 3 != 0 && at_y > 0 {
                at_y -= 1;
                y.consumed();
                if y.explicit_due() {
                    credit_msgs.push(y.take_owed());
                }
            }
            assert!(credit_msgs.len() as u32 <= RESERVE);
            // X processes credit messages, sometimes.
            if step % 4 == 0 {
                for n in credit_msgs.drain(..) {
                    x.returned(n).unwrap();
                }
            }
        }
        assert!(sent > 300, "the flood made progress ({sent})");
        assert!(x.returned(u16::try_from(c).unwrap() + 1).is_err());
    }

    #[test]
    fn piggyback_takes_and_restores() {
        let mut k = Credits::new(4);
        assert!(!k.explicit_due());
        k.consumed();
        assert!(!k.explicit_due());
        k.consumed();
        assert!(k.explicit_due());
        let n = k.take_owed();
        assert_eq!(n, 2);
        assert!(!k.explicit_due());
        k.restore_owed(n);
        assert!(k.explicit_due());
        for _ in 0..4 {
            assert!(k.take());
        }
        assert!(!k.take());
        k.untake();
        assert_eq!(k.available(), 1);
    }
}
