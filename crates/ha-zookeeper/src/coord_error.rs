//! How `zookeeper-client` errors become [`CoordError`]s.
//!
//! The rule that matters: a request whose answer is unknown must never look
//! like an answer. `zookeeper-client` fails requests cut off by a silent
//! connection with a custom "no response from connection" error (and
//! sometimes with I/O or decoding errors of the broken connection), not with
//! `ConnectionLoss`; so every error that is not a server's verdict becomes
//! [`CoordError::ConnectionLoss`] while the client is disconnected, and the
//! session's end wins over whatever a request saw.

use holdfast_ha::backend::CoordError;
use zookeeper_client::{Error, SessionState};

/// Maps `error`, returned by a request on `path` while the client was in
/// `state`, to a [`CoordError`].
pub(crate) fn coord_error(error: Error, path: &str, state: SessionState) -> CoordError {
    match error {
        // The server's verdicts on this request.
        Error::NoNode => CoordError::NoNode(path.to_owned()),
        Error::NodeExists => CoordError::NodeExists(path.to_owned()),
        Error::BadVersion => CoordError::BadVersion(path.to_owned()),
        Error::NotEmpty => CoordError::NotEmpty(path.to_owned()),
        Error::NoAuth => CoordError::NoAuth(path.to_owned()),
        // The session is over.
        Error::SessionExpired => CoordError::SessionExpired,
        Error::ClientClosed => CoordError::Closed,
        // A terminal state: the client rejects everything from now on.
        Error::AuthFailed => CoordError::Closed,
        _ if state.is_terminated() => session_end(state),
        // The answer is unknown (a moved session answers nothing either).
        Error::ConnectionLoss | Error::Timeout | Error::SessionMoved | Error::Custom(_) => {
            CoordError::ConnectionLoss
        }
        _ if state == SessionState::Disconnected => CoordError::ConnectionLoss,
        other => CoordError::Other(format!("{path}: {other}")),
    }
}

/// The error every request gets once the session is in a terminal `state`.
pub(crate) fn session_end(state: SessionState) -> CoordError {
    match state {
        SessionState::Expired => CoordError::SessionExpired,
        SessionState::Disconnected => CoordError::ConnectionLoss,
        _ => CoordError::Closed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONNECTED: SessionState = SessionState::SyncConnected;

    #[test]
    fn server_verdicts_name_the_path() {
        assert_eq!(
            coord_error(Error::NoNode, "/a", CONNECTED),
            CoordError::NoNode("/a".into())
        );
        assert_eq!(
            coord_error(Error::NodeExists, "/a", CONNECTED),
            CoordError::NodeExists("/a".into())
        );
        assert_eq!(
            coord_error(Error::BadVersion, "/a", CONNECTED),
            CoordError::BadVersion("/a".into())
        );
        assert_eq!(
            coord_error(Error::NotEmpty, "/a", CONNECTED),
            CoordError::NotEmpty("/a".into())
        );
        assert_eq!(
            coord_error(Error::NoAuth, "/a", CONNECTED),
            CoordError::NoAuth("/a".into())
        );
    }

    #[test]
    fn unknown_outcomes_are_connection_loss() {
        for error in [Error::ConnectionLoss, Error::Timeout, Error::SessionMoved] {
            assert_eq!(
                coord_error(error, "/a", CONNECTED),
                CoordError::ConnectionLoss
            );
        }
        let cut_off = Error::UnexpectedError("no response from connection in 800ms".into());
        assert_eq!(
            coord_error(cut_off.clone(), "/a", SessionState::Disconnected),
            CoordError::ConnectionLoss
        );
        let other = coord_error(cut_off, "/a", CONNECTED);
        assert!(
            matches!(&other, CoordError::Other(message) if message.contains("/a")),
            "{other:?}"
        );
    }

    #[test]
    fn the_end_of_the_session_wins() {
        assert_eq!(
            coord_error(Error::SessionExpired, "/a", CONNECTED),
            CoordError::SessionExpired
        );
        assert_eq!(
            coord_error(Error::ClientClosed, "/a", CONNECTED),
            CoordError::Closed
        );
        assert_eq!(
            coord_error(Error::AuthFailed, "/a", CONNECTED),
            CoordError::Closed
        );
        assert_eq!(
            coord_error(Error::ConnectionLoss, "/a", SessionState::Expired),
            CoordError::SessionExpired
        );
        assert_eq!(
            coord_error(Error::Unimplemented, "/a", SessionState::Closed),
            CoordError::Closed
        );
        // A verdict stays a verdict.
        assert_eq!(
            coord_error(Error::NoNode, "/a", SessionState::Expired),
            CoordError::NoNode("/a".into())
        );
    }
}
