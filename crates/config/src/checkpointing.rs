//! `execution.checkpointing.*`: whether and how jobs checkpoint, with
//! Flink's keys and defaults. Checkpointing is off until
//! `execution.checkpointing.interval` is set, as in Flink.

use std::path::PathBuf;
use std::time::Duration;

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
    /// (default unset): a local directory (`file://` or a plain path).
    pub dir: Option<PathBuf>,
    /// `execution.checkpointing.savepoint-dir`, alias
    /// `state.savepoints.dir` (default unset): where savepoints go when a
    /// request names no directory.
    pub savepoint_dir: Option<PathBuf>,
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

/// Parses a checkpoint directory: `file:///path`, `file:/path` or a plain
/// path. Other schemes (`s3://`, `hdfs://` …) are refused by name: only
/// local directories are supported for now.
pub(crate) fn dir(text: &str) -> Result<Option<PathBuf>, ValueError> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let path = match text.split_once(':') {
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
    Ok(Some(PathBuf::from(path)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_are_local_paths_or_file_uris() {
        let ok = [
            ("file:///var/chk", "/var/chk"),
            ("file:/var/chk", "/var/chk"),
            ("/var/chk", "/var/chk"),
            ("target/chk", "target/chk"),
            ("C:/chk", "C:/chk"),
        ];
        for (text, path) in ok {
            assert_eq!(dir(text), Ok(Some(PathBuf::from(path))), "{text}");
        }
        assert_eq!(dir("  "), Ok(None));
        for text in [
            "s3://bucket/chk",
            "hdfs://nn/chk",
            "file://host/chk",
            "file://",
        ] {
            let error = dir(text).expect_err(text).to_string();
            assert!(
                error.contains("scheme") || error.contains("local absolute path"),
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
