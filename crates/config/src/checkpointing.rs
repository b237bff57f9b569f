//! `execution.checkpointing.*`: whether and how jobs checkpoint, with
//! Flink's keys and defaults. Checkpointing is off until
//! `execution.checkpointing.interval` is set, as in Flink.

use std::time::Duration;

use holdfast_types::Location;

use holdfast_runtime::checkpoint::{CheckpointConfig, CheckpointingMode};

use crate::error::ValueError;

/// The checkpointing settings as configured: the coordinator's settings
/// (the runtime's [`CheckpointConfig`]), whether they are on, and where
/// checkpoints and savepoints go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointingConfig {
    /// Whether jobs checkpoint: `true` once `execution.checkpointing.interval`
    /// is set (default `false`, as in Flink).
    pub enabled: bool,
    /// `execution.checkpointing.interval`, `timeout`, `min-pause`,
    /// `max-concurrent-checkpoints`, `tolerable-failed-checkpoints`,
    /// `num-retained` and `mode`, with Flink's defaults
    /// ([`CheckpointConfig::every`]). Its `interval` is the configured one
    /// once [`enabled`](Self::enabled); until then it is 1 s and unused.
    pub settings: CheckpointConfig,
    /// `execution.checkpointing.dir`, alias `state.checkpoints.dir`
    /// (default unset): a local directory (`file://`, or a path, made
    /// absolute) or `s3://bucket/prefix`.
    pub dir: Option<Location>,
    /// `execution.checkpointing.savepoint-dir`, alias
    /// `state.savepoints.dir` (default unset): where savepoints go when a
    /// request names no directory.
    pub savepoint_dir: Option<Location>,
}

impl Default for CheckpointingConfig {
    fn default() -> Self {
        CheckpointingConfig {
            enabled: false,
            settings: CheckpointConfig::every(Duration::from_secs(1)),
            dir: None,
            savepoint_dir: None,
        }
    }
}

impl CheckpointingConfig {
    /// Turns checkpointing on, every `interval`: what setting
    /// `execution.checkpointing.interval` does.
    pub fn enable(&mut self, interval: Duration) {
        self.enabled = true;
        self.settings.interval = interval;
    }

    /// The coordinator's settings, or `None` while checkpointing is off.
    pub fn coordinator(&self) -> Option<CheckpointConfig> {
        self.enabled.then(|| self.settings.clone())
    }
}

/// Parses `execution.checkpointing.mode` (Flink's names, any case; `-` for
/// `_` accepted).
pub(crate) fn mode(text: &str) -> Result<CheckpointingMode, ValueError> {
    match text.trim().to_ascii_uppercase().replace('-', "_").as_str() {
        "EXACTLY_ONCE" => Ok(CheckpointingMode::ExactlyOnce),
        "AT_LEAST_ONCE" => Ok(CheckpointingMode::AtLeastOnce),
        _ => Err(ValueError::UnknownCheckpointingMode),
    }
}

/// Parses a checkpoint or savepoint directory: `s3://bucket/prefix`
/// (also Flink's `s3a://` and `s3p://`), `file:///path`, `file:/path` or a
/// plain path (a relative one made absolute against the working
/// directory). Other schemes (`hdfs://` …) are refused by name.
pub(crate) fn dir(text: &str) -> Result<Option<Location>, ValueError> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let path = match text.split_once(':') {
        Some((scheme, _))
            if ["s3", "s3a", "s3p"].contains(&scheme.to_ascii_lowercase().as_str()) =>
        {
            return text
                .parse()
                .map(Some)
                .map_err(|e: holdfast_types::LocationError| {
                    ValueError::BadLocation(e.to_string())
                });
        }
        Some(("file", rest)) => {
            // file:///a/b and file:/a/b are /a/b; file://host/… is not local.
            let rest = rest
                .strip_prefix("//")
                .map_or(Some(rest), |r| r.starts_with('/').then_some(r));
            match rest {
                Some(path) if !path.is_empty() => path,
                _ => return Err(ValueError::NotALocalFile),
            }
        }
        Some((scheme, _))
            if !scheme.is_empty()
                && scheme.len() > 1
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
        {
            return Err(ValueError::UnsupportedScheme {
                scheme: scheme.to_owned(),
            });
        }
        _ => text,
    };
    std::path::absolute(path)
        .map(|path| Some(Location::Local(path)))
        .map_err(|e| ValueError::BadLocation(format!("{path:?} cannot be made absolute: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_are_local_paths_file_uris_or_s3_urls() {
        let here = std::env::current_dir().unwrap();
        let ok = [
            ("file:///var/chk", "/var/chk".to_owned()),
            ("file:/var/chk", "/var/chk".to_owned()),
            ("/var/chk", "/var/chk".to_owned()),
            ("target/chk", here.join("target/chk").display().to_string()),
            ("s3://bucket/chk/", "s3://bucket/chk".to_owned()),
            ("s3a://bucket", "s3://bucket".to_owned()),
        ];
        for (text, shown) in ok {
            assert_eq!(dir(text).unwrap().unwrap().to_string(), shown, "{text}");
        }
        assert_eq!(dir("  "), Ok(None));
        for text in [
            "hdfs://nn/chk",
            "file://host/chk",
            "file://",
            "s3://",
            "s3://Bucket/x",
            "s3://bucket/a//b",
        ] {
            let error = dir(text).expect_err(text).to_string();
            assert!(
                error.contains("scheme")
                    || error.contains("local absolute path")
                    || error.contains("bucket")
                    || error.contains("segment"),
                "{text}: {error}"
            );
        }
    }

    #[test]
    fn modes_are_flinks_names() {
        assert_eq!(mode("EXACTLY_ONCE"), Ok(CheckpointingMode::ExactlyOnce));
        assert_eq!(mode(" at-least-once "), Ok(CheckpointingMode::AtLeastOnce));
        assert!(mode("twice").is_err());
    }

    #[test]
    fn off_until_an_interval_is_set() {
        let mut config = CheckpointingConfig::default();
        assert_eq!(config.coordinator(), None);
        config.enable(Duration::from_secs(5));
        let coordinator = config.coordinator().expect("on");
        assert_eq!(coordinator, CheckpointConfig::every(Duration::from_secs(5)));
    }
}
