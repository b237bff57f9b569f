//! How long a session is known to live: the lease's parameters and the
//! arithmetic on them (the session tracker in `holdfast_ha::connection`
//! enforces the lease).

use std::time::Duration;

/// The client-side lease: how long after the *send* time of the last
/// acknowledged request a session is known to be alive, and how often the
/// connection layer probes to keep that fresh.
///
/// The server expires a session no earlier than `T` after it last heard from
/// the client, so an answer to a request sent at `t_send` proves the session
/// lives until at least `t_send + T`. The lease ends earlier, at
/// `t_send + T·(1 − clock_drift) − T·safety_margin − server_staleness`, to
/// allow for the two clocks running at different rates, for the time it
/// takes to act on a revocation, and for one more thing ZooKeeper does:
///
/// **A partitioned follower keeps answering.** A ZooKeeper follower cut off
/// from its leader goes on serving reads (and answering probes) until it
/// notices, up to `syncLimit · tickTime` later; the session touches it
/// collects meanwhile never reach the leader, which expires the session on
/// time. An answer from such a follower proves less than it seems, by up to
/// that long. `server_staleness` bounds it: `(syncLimit + 1) · tickTime` of
/// the ensemble (12 s for ZooKeeper's sample configuration), zero for a
/// standalone server or the embedded backend.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LeaseConfig {
    /// Bound `ρ` on the relative rate difference of the client's and the
    /// servers' clocks. Default 0.01.
    pub clock_drift: f64,
    /// Safety margin, as a fraction of `T`. Default 0.1.
    pub safety_margin: f64,
    /// Probe interval, as a fraction of `T`. Default 0.2 (`T/5`).
    pub probe_fraction: f64,
    /// How long a partitioned server may go on answering after it lost its
    /// quorum (see above). Default zero; [`HaConfig`](super::HaConfig) sets it for ensembles.
    pub server_staleness: Duration,
}

impl Default for LeaseConfig {
    fn default() -> Self {
        LeaseConfig {
            clock_drift: 0.01,
            safety_margin: 0.1,
            probe_fraction: 0.2,
            server_staleness: Duration::ZERO,
        }
    }
}

/// A broken rule of [`LeaseConfig`].
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LeaseConfigError {
    /// `clock_drift` outside `[0, 0.2]`.
    #[error("lease clock drift must be between 0 and 0.2, got {0}")]
    ClockDrift(f64),
    /// `safety_margin` outside `[0, 0.5]`.
    #[error("lease safety margin must be between 0 and 0.5 of the session timeout, got {0}")]
    SafetyMargin(f64),
    /// `probe_fraction` outside `(0, 0.5]` or not shorter than the lease.
    #[error(
        "lease probe interval must be more than 0 and at most half the lease \
         ({max:.3} of the session timeout), got {got}"
    )]
    ProbeFraction {
        /// The configured fraction.
        got: f64,
        /// The largest allowed.
        max: f64,
    },
    /// The server staleness leaves no room for a lease of at least two probe
    /// intervals at this session timeout.
    #[error(
        "a server staleness of {staleness:?} leaves a lease of {lease:?} at a session timeout of \
         {session_timeout:?}: at least two probe intervals ({probe:?} each) are needed; raise the \
         session timeout or lower the staleness (syncLimit · tickTime of the ensemble)"
    )]
    ServerStaleness {
        /// The configured staleness.
        staleness: Duration,
        /// The session timeout it was checked against.
        session_timeout: Duration,
        /// The lease that leaves.
        lease: Duration,
        /// The probe interval at that timeout.
        probe: Duration,
    },
}

impl LeaseConfig {
    /// The lease length for a negotiated session timeout `t`.
    pub fn lease_length(&self, t: Duration) -> Duration {
        t.mul_f64((1.0 - self.clock_drift - self.safety_margin).max(0.0))
            .saturating_sub(self.server_staleness)
    }

    /// Checks that a session timeout of `t` leaves a usable lease (at least
    /// two probe intervals).
    pub fn validate_for(&self, t: Duration) -> Result<(), LeaseConfigError> {
        let (lease, probe) = (self.lease_length(t), t.mul_f64(self.probe_fraction));
        if lease < probe * 2 {
            return Err(LeaseConfigError::ServerStaleness {
                staleness: self.server_staleness,
                session_timeout: t,
                lease,
                probe,
            });
        }
        Ok(())
    }

    /// How often to probe for a negotiated session timeout `t`: the
    /// configured fraction of `t`, but at most half the lease (a server may
    /// negotiate a shorter `t` than validated), and at least 10 ms.
    pub fn probe_interval(&self, t: Duration) -> Duration {
        t.mul_f64(self.probe_fraction)
            .min(self.lease_length(t) / 2)
            .max(Duration::from_millis(10))
    }

    /// Checks every rule; returns the first broken one.
    pub fn validate(&self) -> Result<(), LeaseConfigError> {
        if !(0.0..=0.2).contains(&self.clock_drift) {
            return Err(LeaseConfigError::ClockDrift(self.clock_drift));
        }
        if !(0.0..=0.5).contains(&self.safety_margin) {
            return Err(LeaseConfigError::SafetyMargin(self.safety_margin));
        }
        let max = ((1.0 - self.clock_drift - self.safety_margin) / 2.0).min(0.5);
        if !(self.probe_fraction > 0.0 && self.probe_fraction <= max) {
            return Err(LeaseConfigError::ProbeFraction {
                got: self.probe_fraction,
                max,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_lease_is_89_percent_of_the_session_and_probes_five_times() {
        let config = LeaseConfig::default();
        config.validate().unwrap();
        let t = Duration::from_secs(40);
        assert_eq!(config.lease_length(t), Duration::from_secs_f64(35.6));
        assert_eq!(config.probe_interval(t), Duration::from_secs(8));
    }

    #[test]
    fn server_staleness_shortens_the_lease_and_must_leave_room() {
        let config = LeaseConfig {
            server_staleness: Duration::from_secs(12),
            ..LeaseConfig::default()
        };
        assert_eq!(
            config.lease_length(Duration::from_secs(40)),
            Duration::from_secs_f64(23.6)
        );
        config.validate_for(Duration::from_secs(40)).unwrap();
        let error = config.validate_for(Duration::from_secs(15)).unwrap_err();
        assert!(error.to_string().contains("session timeout"), "{error}");
        assert_eq!(config.lease_length(Duration::from_secs(10)), Duration::ZERO);
    }

    #[test]
    fn each_broken_rule_is_named() {
        let bad = |f: fn(&mut LeaseConfig)| {
            let mut config = LeaseConfig::default();
            f(&mut config);
            config.validate().unwrap_err()
        };
        assert_eq!(
            bad(|c| c.clock_drift = 0.5),
            LeaseConfigError::ClockDrift(0.5)
        );
        assert_eq!(
            bad(|c| c.safety_margin = -0.1),
            LeaseConfigError::SafetyMargin(-0.1)
        );
        assert!(matches!(
            bad(|c| c.probe_fraction = 0.0),
            LeaseConfigError::ProbeFraction { .. }
        ));
        assert!(matches!(
            bad(|c| c.probe_fraction = 0.46),
            LeaseConfigError::ProbeFraction { .. }
        ));
    }
}
