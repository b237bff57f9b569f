//! What a JobManager publishes as its leader address: where its RPC and REST
//! endpoints are. Stored in the HA layer's `connection_info` as JSON.

use serde::{Deserialize, Serialize};

/// A JobManager's endpoints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobManagerAddress {
    /// `host:port` of its RPC server (JobManagerService).
    pub rpc: String,
    /// `http://host:port` of its REST API.
    pub rest: String,
}

/// A leader address that is not a JobManager's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the leader's address {text:?} is not a holdfast JobManager address ({reason})")]
pub struct BadAddress {
    /// The address as published (cut to 200 characters).
    pub text: String,
    /// What is wrong.
    pub reason: String,
}

impl JobManagerAddress {
    /// The address as published.
    pub fn encode(&self) -> String {
        serde_json::to_string(self).expect("two strings always serialize")
    }

    /// Parses a published address.
    pub fn decode(text: &str) -> Result<JobManagerAddress, BadAddress> {
        let bad = |reason: String| BadAddress {
            text: text.chars().take(200).collect(),
            reason,
        };
        let address: JobManagerAddress =
            serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        if address.rpc.is_empty() || !address.rest.starts_with("http") {
            return Err(bad("empty rpc or non-http rest endpoint".into()));
        }
        Ok(address)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_names_garbage() {
        let address = JobManagerAddress {
            rpc: "127.0.0.1:6123".into(),
            rest: "http://127.0.0.1:8081".into(),
        };
        assert_eq!(JobManagerAddress::decode(&address.encode()), Ok(address));
        let error = JobManagerAddress::decode("127.0.0.1:6123").unwrap_err();
        assert!(error.to_string().contains("127.0.0.1:6123"), "{error}");
    }
}
