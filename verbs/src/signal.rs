//! Selective signalling: small inline sends request a completion only one
//! time in `FERRY_VERBS_SIGNAL_EVERY` (16), so the CQ sees one entry per
//! 16 such sends instead of one per send.
//!
//! # Why it is safe
//! - An RC send queue completes in order, so a signaled work request's
//!   completion means every work request posted before it on that QP has
//!   completed too. Each signaled work request carries in its `wr_id`
//!   (bits 32..56) how many unsignaled ones precede it since the previous
//!   signaled one (`covers`); its completion gives back `1 + covers`
//!   send-queue slots (`sq_free`).
//! - Only **inline** sends go unsignaled: the provider copied their bytes
//!   during `ibv_post_send`, so they hold no buffer. Sends from the
//!   registered slab, RDMA operations, credit messages, hellos and probes
//!   are always signaled, so a slab slot is reused only after its own
//!   completion.
//! - The send queue cannot fill with unsignaled work: a send is signaled
//!   when `covers` would reach `every - 1` or when `sq_free <= every`, so a
//!   signaled request is always among the last `every` posted. A tail of
//!   up to `every - 1` unsignaled sends holds send-queue slots (not
//!   buffers) until the next signaled request (the next 16th send, a
//!   credit message, or the keepalive probe).
//! - A QP in error flushes its outstanding work with error completions;
//!   a flushed unsignaled send (`UNSIG_TAG`) only reports the failure.

/// The `wr_id` tag of an unsignaled inline send (top byte).
pub(crate) const UNSIG_TAG: u64 = 9 << 56;

/// Whether the next inline send may go unsignaled.
#[inline]
pub(crate) fn may_skip(unsig: u32, sq_free: u32, every: u32) -> bool {
    unsig + 1 < every && sq_free > every
}

/// Takes the count of unsignaled requests a signaled one now covers, as
/// the `wr_id` bits that carry it.
#[inline]
pub(crate) fn covers(unsig: &mut u32) -> u64 {
    u64::from(std::mem::take(unsig) & 0xff_ffff) << 32
}

/// The count a completed signaled request covered.
#[inline]
pub(crate) fn covered(wr_id: u64) -> u32 {
    ((wr_id >> 32) & 0xff_ffff) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream of inline sends: one in `every` is signaled, each covers
    /// the ones before it, and the send queue never runs out.
    #[test]
    fn one_in_every_is_signaled_and_covers_the_rest() {
        let (every, depth) = (16u32, 98u32);
        let (mut unsig, mut sq_free, mut signaled) = (0u32, depth, Vec::new());
        for _ in 0..1000 {
            assert!(sq_free > 0);
            if may_skip(unsig, sq_free, every) {
                unsig += 1;
            } else {
                signaled.push(covered(covers(&mut unsig) | 3 << 56));
            }
            sq_free -= 1;
            // The HCA completes everything posted; the CQ reports only the
            // signaled ones.
            for c in signaled.drain(..) {
                sq_free += 1 + c;
            }
            assert!(unsig < every);
        }
        assert_eq!(sq_free + unsig, depth, "every slot is accounted for");
        // A nearly full queue signals every send.
        assert!(!may_skip(0, every, every));
        assert!(!may_skip(every - 1, depth, every));
        assert!(may_skip(0, depth, every));
    }
}
