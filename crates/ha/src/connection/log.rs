//! Log lines a tired operator can act on: what happened, what the system
//! will do, and by when.

use std::time::Duration;

use super::{ConnectionEvent, ConnectionState, LostReason};
use crate::policy::ErrorPolicy;

/// Logs one connection transition.
pub(super) fn log_transition(
    event: &ConnectionEvent,
    policy: ErrorPolicy,
    backend: &str,
    retry: Duration,
) {
    let session = event.session;
    let timeout = event.session_timeout.as_secs_f64();
    let remaining = event.lease_remaining().as_secs_f64();
    match event.state {
        ConnectionState::Connected => tracing::info!(
            %session, backend, policy = %policy,
            "connected to the coordination service with a new session (negotiated timeout {timeout:.1} s); \
             lease valid for {remaining:.1} s and refreshed by probes"
        ),
        ConnectionState::Reconnected => tracing::info!(
            %session, backend, policy = %policy,
            "reconnected with the same session; nothing was lost; re-reading latch and leader to catch up"
        ),
        ConnectionState::Suspended | ConnectionState::ReadOnly => {
            let what = match policy {
                ErrorPolicy::Lease => format!(
                    "keeping leadership and the known leader until the lease deadline in {remaining:.1} s; \
                     if the connection is not back by then, the session counts as lost"
                ),
                ErrorPolicy::Session => {
                    "keeping leadership until the server reports the session expired \
                     (session policy: no lease, an old leader may overlap a new one)"
                        .to_owned()
                }
                ErrorPolicy::Standard => "revoking leadership and forgetting the known leader now \
                     (standard policy: the incident's behaviour)"
                    .to_owned(),
            };
            tracing::warn!(
                %session, backend, policy = %policy, state = %event.state,
                "coordination connection suspended (the session is probably alive); {what}"
            );
        }
        ConnectionState::Lost(reason) => {
            let why = match reason {
                LostReason::LeaseExpired => {
                    "the lease deadline passed while suspended, so the server may \
                     have expired the session"
                }
                LostReason::SessionExpired => "the server expired the session",
                LostReason::Closed => "the session was closed",
                LostReason::AuthFailed => {
                    "the server rejected our credentials (check the ACL settings)"
                }
            };
            if reason == LostReason::Closed {
                tracing::info!(%session, backend, "coordination session closed");
            } else {
                tracing::warn!(
                    %session, backend, policy = %policy,
                    "coordination session lost: {why}; leadership held through it is revoked now; \
                     creating a new session (retrying every {:.1} s) and re-joining",
                    retry.as_secs_f64()
                );
            }
        }
    }
}
