//! [`S3Options`]: how to reach the S3-compatible store of `s3://`
//! locations, as values: `holdfast-config` reads them from Flink's `s3.*`
//! keys, `holdfast-storage` makes its client from them (the standard
//! `AWS_*` environment variables fill in what is not set).

use std::time::Duration;

pub use crate::secret::Secret;

/// How to reach the S3-compatible store of `s3://` locations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct S3Options {
    /// `s3.endpoint`: the server (`http://host:port`); none: AWS, or
    /// `AWS_ENDPOINT_URL`/`AWS_ENDPOINT`.
    pub endpoint: Option<String>,
    /// `s3.endpoint.region`; none: `AWS_REGION`/`AWS_DEFAULT_REGION`, else
    /// `us-east-1`.
    pub region: Option<String>,
    /// `s3.access-key`; none: `AWS_ACCESS_KEY_ID` (or the machine's
    /// instance credentials).
    pub access_key: Option<String>,
    /// `s3.secret-key`; none: `AWS_SECRET_ACCESS_KEY`.
    pub secret_key: Option<Secret>,
    /// `s3.path.style.access`: `http://host/bucket/key` rather than
    /// `http://bucket.host/key` (most self-hosted servers want it).
    pub path_style_access: bool,
    /// `s3.connection.timeout`: the longest one request may take.
    pub request_timeout: Duration,
    /// `s3.connection.establish.timeout`: the longest a connection may
    /// take to open.
    pub connect_timeout: Duration,
    /// `s3.retry.limit`: how often a failed request (an unreachable
    /// server, 5xx such as 503 SlowDown, a timeout) is retried, with
    /// exponential backoff.
    pub max_retries: usize,
    /// `s3.retry.deadline`: no retry starts later than this after the
    /// first attempt; then the operation fails, naming the bucket, the key
    /// and the cause.
    pub retry_deadline: Duration,
}

impl Default for S3Options {
    fn default() -> S3Options {
        S3Options {
            endpoint: None,
            region: None,
            access_key: None,
            secret_key: None,
            path_style_access: false,
            request_timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(5),
            max_retries: 10,
            retry_deadline: Duration::from_secs(60),
        }
    }
}
