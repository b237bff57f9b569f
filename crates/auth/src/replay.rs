//! A bounded memory of the signed headers accepted recently, so none is
//! accepted twice.
//!
//! A header's (timestamp, peer, nonce) is remembered until its timestamp
//! leaves the window; since the MAC covers all three, a replay repeats them
//! exactly. When an entry is dropped (expired, or evicted because the cache
//! is full), the *floor* rises to its timestamp and every header signed at
//! or before the floor is refused. Invariant: every header ever accepted is
//! either still remembered or at or below the floor, so none passes twice,
//! even if the wall clock steps back.

use std::collections::BTreeSet;

use crate::peer::PeerId;
use crate::rejection::Rejection;
use crate::token::Nonce;

/// The recently accepted headers. Pure: the caller passes `now`.
#[derive(Debug)]
pub struct ReplayCache {
    capacity: usize,
    seen: BTreeSet<(u64, PeerId, Nonce)>,
    floor_ms: Option<u64>,
}

impl ReplayCache {
    /// An empty cache holding at most `capacity` entries (at least one).
    pub fn new(capacity: usize) -> ReplayCache {
        ReplayCache {
            capacity: capacity.max(1),
            seen: BTreeSet::new(),
            floor_ms: None,
        }
    }

    /// Admits a header signed at `unix_ms` by `peer` with `nonce`, or
    /// refuses it as a replay. Forgets entries signed before
    /// `now_ms - window_ms` first.
    pub fn admit(
        &mut self,
        peer: &PeerId,
        nonce: Nonce,
        unix_ms: u64,
        now_ms: u64,
        window_ms: u64,
    ) -> Result<(), Rejection> {
        let expired_before = now_ms.saturating_sub(window_ms);
        while let Some(first) = self.seen.first() {
            if first.0 >= expired_before {
                break;
            }
            self.forget_first();
        }
        if self.floor_ms.is_some_and(|floor| unix_ms <= floor) {
            return Err(Rejection::BelowReplayFloor);
        }
        let key = (unix_ms, peer.clone(), nonce);
        if self.seen.contains(&key) {
            return Err(Rejection::Replayed);
        }
        if self.seen.len() >= self.capacity {
            self.forget_first();
            if self.floor_ms.is_some_and(|floor| unix_ms <= floor) {
                return Err(Rejection::BelowReplayFloor);
            }
        }
        self.seen.insert(key);
        Ok(())
    }

    /// How many headers are remembered.
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    fn forget_first(&mut self) {
        if let Some((unix_ms, _, _)) = self.seen.pop_first() {
            self.floor_ms = Some(self.floor_ms.map_or(unix_ms, |floor| floor.max(unix_ms)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const WINDOW: u64 = 1_000;

    fn peer(name: &str) -> PeerId {
        PeerId::new(name).unwrap()
    }

    #[test]
    fn refuses_the_same_header_twice_but_not_another_peer_or_nonce() {
        let mut cache = ReplayCache::new(16);
        assert_eq!(cache.admit(&peer("a"), [1; 16], 100, 100, WINDOW), Ok(()));
        assert_eq!(
            cache.admit(&peer("a"), [1; 16], 100, 150, WINDOW),
            Err(Rejection::Replayed)
        );
        assert_eq!(cache.admit(&peer("b"), [1; 16], 100, 150, WINDOW), Ok(()));
        assert_eq!(cache.admit(&peer("a"), [2; 16], 100, 150, WINDOW), Ok(()));
        assert_eq!(cache.len(), 3);
    }

    #[test]
    fn forgets_expired_entries_and_raises_the_floor() {
        let mut cache = ReplayCache::new(16);
        cache.admit(&peer("a"), [1; 16], 100, 100, WINDOW).unwrap();
        cache
            .admit(&peer("a"), [2; 16], 2_000, 2_000, WINDOW)
            .unwrap();
        assert_eq!(cache.len(), 1);
        // The clock stepped back: the forgotten header still does not pass.
        assert_eq!(
            cache.admit(&peer("a"), [1; 16], 100, 100, WINDOW),
            Err(Rejection::BelowReplayFloor)
        );
    }

    #[test]
    fn a_full_cache_evicts_the_oldest_and_refuses_anything_as_old() {
        let mut cache = ReplayCache::new(2);
        cache.admit(&peer("a"), [1; 16], 10, 10, WINDOW).unwrap();
        cache.admit(&peer("a"), [2; 16], 20, 20, WINDOW).unwrap();
        cache.admit(&peer("a"), [3; 16], 30, 30, WINDOW).unwrap();
        assert_eq!(cache.len(), 2);
        assert_eq!(
            cache.admit(&peer("a"), [1; 16], 10, 30, WINDOW),
            Err(Rejection::BelowReplayFloor)
        );
        assert_eq!(
            cache.admit(&peer("b"), [9; 16], 5, 30, WINDOW),
            Err(Rejection::BelowReplayFloor)
        );
        assert_eq!(cache.admit(&peer("b"), [9; 16], 31, 31, WINDOW), Ok(()));
    }

    proptest! {
        /// Whatever the order, clock and capacity: no header is admitted twice.
        #[test]
        fn nothing_is_admitted_twice(
            capacity in 1usize..8,
            calls in prop::collection::vec((0u8..3, 0u8..4, 0u64..50, 0u64..60), 0..200),
        ) {
            let mut cache = ReplayCache::new(capacity);
            let mut admitted = std::collections::HashSet::new();
            for (p, n, signed, now) in calls {
                let peer = peer(&format!("p{p}"));
                if cache.admit(&peer, [n; 16], signed, now, 10).is_ok() {
                    prop_assert!(admitted.insert((p, n, signed)), "admitted twice");
                }
                prop_assert!(cache.len() <= capacity);
            }
        }
    }
}
