//! [`ErrorPolicy`]: which of the HA layer's error policies a process runs,
//! as a value with its configuration names. What each policy does on each
//! connection state is decided in `holdfast_ha::policy`.

use std::fmt;
use std::str::FromStr;

/// How the HA layer reacts to connection states (HA contract §3,
/// `docs/HA-CONTRACT.md`; the table is in `holdfast_ha::policy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ErrorPolicy {
    /// Suspended counts as lost (Curator's `StandardConnectionStateErrorPolicy`).
    Standard,
    /// Only lost counts (Curator's `SessionConnectionStateErrorPolicy`),
    /// without a lease: an old leader may act after the server expired it.
    Session,
    /// Suspended keeps leadership until the client-side lease deadline, which
    /// comes before the server could expire the session.
    #[default]
    Lease,
}

impl ErrorPolicy {
    /// Whether leadership also requires an unexpired lease, and a lease that
    /// runs out loses the session.
    pub fn enforces_lease(self) -> bool {
        self == ErrorPolicy::Lease
    }

    /// The policy's configuration name.
    pub fn name(self) -> &'static str {
        match self {
            ErrorPolicy::Standard => "standard",
            ErrorPolicy::Session => "session",
            ErrorPolicy::Lease => "lease",
        }
    }

    /// Flink's `high-availability.zookeeper.client.tolerate-suspended-connections`:
    /// false → `standard`, true → `lease`.
    pub fn from_tolerate_suspended(tolerate: bool) -> ErrorPolicy {
        if tolerate {
            ErrorPolicy::Lease
        } else {
            ErrorPolicy::Standard
        }
    }
}

impl fmt::Display for ErrorPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown policy name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown error policy {0:?}: expected standard, session or lease")]
pub struct UnknownPolicy(pub String);

impl FromStr for ErrorPolicy {
    type Err = UnknownPolicy;

    fn from_str(name: &str) -> Result<ErrorPolicy, UnknownPolicy> {
        match name.trim().to_ascii_lowercase().as_str() {
            "standard" => Ok(ErrorPolicy::Standard),
            "session" => Ok(ErrorPolicy::Session),
            "lease" => Ok(ErrorPolicy::Lease),
            _ => Err(UnknownPolicy(name.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [ErrorPolicy; 3] = [
        ErrorPolicy::Standard,
        ErrorPolicy::Session,
        ErrorPolicy::Lease,
    ];

    #[test]
    fn names_parse_and_flinks_flag_maps() {
        for policy in ALL {
            assert_eq!(policy.name().parse::<ErrorPolicy>(), Ok(policy));
        }
        assert_eq!(" Lease ".parse::<ErrorPolicy>(), Ok(ErrorPolicy::Lease));
        assert!(
            "curator"
                .parse::<ErrorPolicy>()
                .unwrap_err()
                .to_string()
                .contains("curator")
        );
        assert_eq!(
            ErrorPolicy::from_tolerate_suspended(false),
            ErrorPolicy::Standard
        );
        assert_eq!(
            ErrorPolicy::from_tolerate_suspended(true),
            ErrorPolicy::Lease
        );
        assert_eq!(ErrorPolicy::default(), ErrorPolicy::Lease);
        assert!(ErrorPolicy::Lease.enforces_lease() && !ErrorPolicy::Session.enforces_lease());
    }
}
