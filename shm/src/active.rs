//! Which peers' fastbox rings the receiver looks at on each progress call.
//!
//! Polling every local peer's ring costs one cache-line load per peer per
//! call: on a 64-rank node, 63 loads, nearly all of rings nothing was
//! written to. As Open MPI's vader does, the rings of peers that delivered
//! recently (the *active* set, at most [`ACTIVE_MAX`]) are polled on every
//! call, and the others one per call, in turn: a packet from a quiet peer
//! waits at most one sweep (as many calls as there are peers), and the
//! peer then joins the active set. A peer that delivered nothing for
//! [`ACTIVE_IDLE`] calls leaves it. Nodes with at most [`ACTIVE_MAX`] ranks
//! poll everyone, as before.
//!
//! Nothing is lost or reordered by the wait: a cell from a quiet peer first
//! delivers the fastbox packets sent before it (`fb_catch_up`), and a rank
//! about to sleep checks every ring (`fastbox::quiet`).

/// Peers polled on every call, at most.
pub(crate) const ACTIVE_MAX: usize = 8;
/// Calls without a delivery after which a peer leaves the active set.
pub(crate) const ACTIVE_IDLE: u32 = 1024;
/// Calls between two looks for idle members (a power of two).
const EXPIRE_EVERY: u32 = 64;

#[derive(Debug)]
pub(crate) struct Active {
    peers: u32,
    /// `(peer, call of its last delivery)`.
    set: Vec<(u32, u32)>,
    /// Whether each peer is in `set`.
    member: Vec<bool>,
    /// The quiet peer to look at next.
    cursor: u32,
}

impl Active {
    pub(crate) fn new(peers: usize) -> Active {
        Active {
            peers: peers as u32,
            set: Vec::with_capacity(ACTIVE_MAX),
            member: vec![false; peers],
            cursor: 0,
        }
    }

    /// True when every peer is polled on every call (a small node).
    #[inline]
    pub(crate) fn everyone(&self) -> bool {
        self.peers as usize <= ACTIVE_MAX
    }

    /// The peers to poll on call `call`: the active set (dropping those
    /// idle too long), then the next quiet one.
    pub(crate) fn round(&mut self, call: u32, out: &mut [u32; ACTIVE_MAX + 1]) -> usize {
        if call % EXPIRE_EVERY == 0 {
            let member = &mut self.member;
            self.set.retain(|&(p, last)| {
                let keep = call.wrapping_sub(last) < ACTIVE_IDLE;
                if !keep {
                    member[p as usize] = false;
                }
                keep
            });
        }
        let mut n = 0;
        for &(p, _) in &self.set {
            out[n] = p;
            n += 1;
        }
        // The next peer not in the set (the set is smaller than the node).
        for _ in 0..self.peers {
            let p = self.cursor;
            self.cursor = if p + 1 == self.peers { 0 } else { p + 1 };
            if !self.member[p as usize] {
                out[n] = p;
                n += 1;
                break;
            }
        }
        n
    }

    /// Peer `p` delivered on call `call`.
    #[inline]
    pub(crate) fn delivered(&mut self, p: u32, call: u32) {
        if self.everyone() {
            return;
        }
        if self.member[p as usize] {
            if let Some(e) = self.set.iter_mut().find(|(q, _)| *q == p) {
                e.1 = call;
            }
            return;
        }
        if self.set.len() == ACTIVE_MAX {
            // Make room: the one idle longest goes.
            if let Some(i) = (0..self.set.len()).max_by_key(|&i| call.wrapping_sub(self.set[i].1)) {
                let (gone, _) = self.set.swap_remove(i);
                self.member[gone as usize] = false;
            }
        }
        self.member[p as usize] = true;
        self.set.push((p, call));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_peers_are_each_visited_once_a_sweep() {
        let mut a = Active::new(64);
        let mut seen = vec![0u32; 64];
        let mut out = [0; ACTIVE_MAX + 1];
        for call in 0..64 {
            let n = a.round(call, &mut out);
            assert_eq!(n, 1, "nobody is active: one quiet peer per call");
            seen[out[0] as usize] += 1;
        }
        assert!(seen.iter().all(|&s| s == 1), "{seen:?}");
    }

    #[test]
    fn delivering_peers_are_polled_every_call_until_idle() {
        let mut a = Active::new(64);
        let mut out = [0; ACTIVE_MAX + 1];
        a.delivered(7, 0);
        a.delivered(9, 0);
        for call in 1..100 {
            let n = a.round(call, &mut out);
            assert!(out[..n].contains(&7) && out[..n].contains(&9));
        }
        a.delivered(9, 100);
        let n = a.round(ACTIVE_IDLE + EXPIRE_EVERY, &mut out);
        assert!(!out[..n].contains(&7), "7 went idle");
        assert!(out[..n].contains(&9), "9 delivered later");
    }

    #[test]
    fn the_set_is_bounded_and_the_longest_idle_goes() {
        let mut a = Active::new(64);
        for p in 0..ACTIVE_MAX as u32 {
            a.delivered(p, p);
        }
        a.delivered(40, 100);
        let mut out = [0; ACTIVE_MAX + 1];
        let n = a.round(101, &mut out);
        assert_eq!(n, ACTIVE_MAX + 1);
        assert!(out[..ACTIVE_MAX].contains(&40));
        assert!(!out[..ACTIVE_MAX].contains(&0), "peer 0 was idle longest");
    }

    #[test]
    fn small_nodes_poll_everyone() {
        assert!(Active::new(ACTIVE_MAX).everyone());
        assert!(!Active::new(ACTIVE_MAX + 1).everyone());
    }
}
