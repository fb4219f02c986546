//! [`PeerFailures`]: the bookkeeping every device does for the *Failure*
//! clause: mark a peer failed once, report it to the sink once.

use super::PeerHealth;
use crate::error::Error;

/// The health of a device's peers, indexed as the device indexes them (job
/// rank, or its own local index), with the count of failures not yet
/// reported.
///
/// A device calls [`fail`](PeerFailures::fail) wherever it learns of a
/// failure (an error completion, a closed socket, a corrupt packet), and
/// drains [`take_unreported`](PeerFailures::take_unreported) in `progress`,
/// telling the sink about each peer it returns: every failure is reported
/// exactly once.
///
/// ```
/// use ferry_core::device::PeerFailures;
/// use ferry_core::{Error, PeerError};
///
/// let mut peers = PeerFailures::new(3);
/// let died: Error = PeerError::Died { rank: 2 }.into();
/// assert!(peers.fail(2, died));
/// assert!(!peers.fail(2, died), "a failed peer stays failed, once");
/// assert_eq!(peers.unreported(), 1);
/// assert_eq!(peers.take_unreported(), Some((2, died)));
/// assert_eq!(peers.take_unreported(), None, "reported once");
/// assert_eq!(peers.error(2), Some(died));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerFailures {
    health: Vec<PeerHealth>,
    unreported: usize,
}

impl PeerFailures {
    /// `peers` peers, all alive.
    pub fn new(peers: usize) -> PeerFailures {
        PeerFailures {
            health: vec![PeerHealth::Alive; peers],
            unreported: 0,
        }
    }

    /// How many peers the table holds.
    pub fn len(&self) -> usize {
        self.health.len()
    }

    /// True for a table of no peers.
    pub fn is_empty(&self) -> bool {
        self.health.is_empty()
    }

    /// What is known of `peer` (`None` outside the table).
    pub fn health(&self, peer: usize) -> Option<PeerHealth> {
        self.health.get(peer).copied()
    }

    /// True if `peer` has not failed (false outside the table).
    #[inline]
    pub fn is_alive(&self, peer: usize) -> bool {
        matches!(self.health.get(peer), Some(PeerHealth::Alive))
    }

    /// The error `peer`'s operations fail with, once it has failed.
    #[inline]
    pub fn error(&self, peer: usize) -> Option<Error> {
        match self.health.get(peer) {
            Some(PeerHealth::Failed { error, .. }) => Some(*error),
            _ => None,
        }
    }

    /// Marks `peer` failed with `error`, to be reported. Returns true if
    /// this is news: a peer already failed keeps its first error, and a
    /// peer outside the table is ignored.
    pub fn fail(&mut self, peer: usize, error: Error) -> bool {
        match self.health.get_mut(peer) {
            Some(h @ PeerHealth::Alive) => {
                *h = PeerHealth::Failed {
                    error,
                    reported: false,
                };
                self.unreported += 1;
                true
            }
            _ => false,
        }
    }

    /// Failures marked and not yet reported.
    #[inline]
    pub fn unreported(&self) -> usize {
        self.unreported
    }

    /// True if some failure waits to be reported.
    #[inline]
    pub fn has_unreported(&self) -> bool {
        self.unreported > 0
    }

    /// The next failure not yet reported, marked reported now (the caller
    /// tells the sink): each failed peer is returned exactly once.
    pub fn take_unreported(&mut self) -> Option<(usize, Error)> {
        if self.unreported == 0 {
            return None;
        }
        for (peer, h) in self.health.iter_mut().enumerate() {
            if let PeerHealth::Failed {
                error,
                reported: reported @ false,
            } = h
            {
                *reported = true;
                self.unreported -= 1;
                return Some((peer, *error));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::PeerError;

    fn died(rank: i32) -> Error {
        PeerError::Died { rank }.into()
    }

    #[test]
    fn each_failure_is_reported_once_and_the_count_goes_down_per_peer() {
        let mut t = PeerFailures::new(4);
        assert!(t.fail(1, died(1)));
        assert!(t.fail(3, died(3)));
        assert_eq!(t.unreported(), 2);
        assert_eq!(t.take_unreported(), Some((1, died(1))));
        assert_eq!(t.unreported(), 1, "one reported, one still owed");
        assert!(t.has_unreported());
        // A failure marked between two reports is not lost.
        assert!(t.fail(0, died(0)));
        assert_eq!(t.unreported(), 2);
        assert_eq!(t.take_unreported(), Some((0, died(0))));
        assert_eq!(t.take_unreported(), Some((3, died(3))));
        assert_eq!(t.take_unreported(), None);
        assert_eq!(t.unreported(), 0);
        assert!(!t.has_unreported());
        assert!(t.is_alive(2) && !t.is_alive(1));
    }

    #[test]
    fn a_failed_peer_keeps_its_first_error_and_is_not_counted_again() {
        let mut t = PeerFailures::new(2);
        let protocol: Error = PeerError::Protocol {
            rank: 1,
            what: "bad",
        }
        .into();
        assert!(t.fail(1, protocol));
        assert!(!t.fail(1, died(1)));
        assert_eq!(t.unreported(), 1);
        assert_eq!(t.take_unreported(), Some((1, protocol)));
        assert!(!t.fail(1, died(1)), "reported stays failed");
        assert_eq!(t.unreported(), 0);
        assert_eq!(t.error(1), Some(protocol));
        assert_eq!(
            t.health(1),
            Some(PeerHealth::Failed {
                error: protocol,
                reported: true
            })
        );
    }

    #[test]
    fn peers_outside_the_table_are_ignored() {
        let mut t = PeerFailures::new(1);
        assert!(!t.fail(5, died(5)));
        assert_eq!(t.unreported(), 0);
        assert_eq!(t.health(5), None);
        assert_eq!(t.error(5), None);
        assert!(!t.is_alive(5));
        assert_eq!(t.len(), 1);
        assert!(!t.is_empty());
    }
}
