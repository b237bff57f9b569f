//! [`ClusterConfig::from_source`]: reads every known key from a
//! [`ConfigSource`], naming key, value and origin in every error, and
//! reports unknown keys as [`Warning`]s.

use std::path::PathBuf;
use std::time::Duration;

use holdfast_types::ha::keys::{HA_TYPE, HA_TYPE_ALIAS};
use holdfast_types::ha::{self, HaConfig};
use holdfast_types::parse_duration;

use crate::cluster::{ClusterConfig, StateBackendKind};
use crate::error::{ConfigError, ValueError};
use crate::keys::{self, *};
use crate::restart::RestartStrategyKind;
use crate::source::{ConfigSource, Entry};
use crate::ssl;
use crate::warning::{Warning, suggest};

/// Parses the keys of one source, keeping where each value came from.
pub(crate) struct Reader<'a> {
    source: &'a ConfigSource,
}

impl Reader<'_> {
    /// Parses `key` into `field` if it is set.
    pub(crate) fn set<T>(
        &self,
        field: &mut T,
        key: &'static str,
        parse: impl FnOnce(&str) -> Result<T, ValueError>,
    ) -> Result<(), ConfigError> {
        if let Some(value) = self.get(key, parse)? {
            *field = value;
        }
        Ok(())
    }

    /// Parses `key` if it is set.
    fn get<T>(
        &self,
        key: &'static str,
        parse: impl FnOnce(&str) -> Result<T, ValueError>,
    ) -> Result<Option<T>, ConfigError> {
        let Some(entry) = self.source.get(key) else {
            return Ok(None);
        };
        parse(&entry.value)
            .map(Some)
            .map_err(|reason| invalid(key, entry, reason))
    }
}

fn invalid(key: &'static str, entry: &Entry, reason: ValueError) -> ConfigError {
    ConfigError::InvalidValue {
        key,
        value: entry.value.clone(),
        origin: entry.origin.clone(),
        reason,
    }
}

pub(crate) fn duration(text: &str) -> Result<Duration, ValueError> {
    parse_duration(text).map_err(ValueError::NotADuration)
}

fn buffers(text: &str) -> Result<u32, ValueError> {
    match count(text)? {
        n @ 1..=1024 => Ok(n),
        n => Err(ValueError::BuffersOutOfRange(n)),
    }
}

fn count(text: &str) -> Result<u32, ValueError> {
    text.trim().parse().map_err(|_| ValueError::NotACount)
}

fn rpc_failures(text: &str) -> Result<Option<u32>, ValueError> {
    match text.trim() {
        "-1" => Ok(None),
        other => match count(other) {
            Ok(0) | Err(_) => Err(ValueError::NotAFailureThreshold),
            Ok(n) => Ok(Some(n)),
        },
    }
}

fn port(text: &str) -> Result<u16, ValueError> {
    text.trim().parse().map_err(|_| ValueError::NotAPort)
}

fn bind_port(text: &str) -> Result<Option<u16>, ValueError> {
    port(text).map(Some)
}

fn ratio(text: &str) -> Result<f64, ValueError> {
    text.trim().parse().map_err(|_| ValueError::NotANumber)
}

fn host(text: &str) -> Result<String, ValueError> {
    Ok(text.trim().to_owned())
}

fn optional_host(text: &str) -> Result<Option<String>, ValueError> {
    let text = text.trim();
    Ok((!text.is_empty()).then(|| text.to_owned()))
}

fn resource_id(text: &str) -> Result<Option<String>, ValueError> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse::<holdfast_runtime::ids::ResourceId>()
        .map_err(|e| ValueError::BadResourceId(Box::new(e)))?;
    Ok(Some(text.to_owned()))
}

fn path(text: &str) -> Result<Option<PathBuf>, ValueError> {
    let text = text.trim();
    Ok((!text.is_empty()).then(|| PathBuf::from(text)))
}

fn attempts(text: &str) -> Result<Option<u32>, ValueError> {
    match text.trim().to_ascii_lowercase().as_str() {
        "infinite" | "inf" | "unlimited" => Ok(None),
        _ => count(text)
            .map(Some)
            .map_err(|_| ValueError::NotAnAttemptCount),
    }
}

fn state_backend(text: &str) -> Result<StateBackendKind, ValueError> {
    match text.trim().to_ascii_lowercase().as_str() {
        "hashmap" => Ok(StateBackendKind::HashMap),
        "fjall" | "rocksdb" => Ok(StateBackendKind::Fjall),
        _ => Err(ValueError::UnknownStateBackend),
    }
}

/// `state.backend.rocksdb.timer-service.factory`: whether timers go on
/// disk.
fn timers_on_disk(text: &str) -> Result<bool, ValueError> {
    match text.trim().to_ascii_lowercase().as_str() {
        "rocksdb" => Ok(true),
        "heap" => Ok(false),
        _ => Err(ValueError::UnknownTimerService),
    }
}

/// `state.backend.rocksdb.timer-service.cache-size`: from 1 to
/// [`MAX_TIMER_CACHE`].
fn timer_cache_size(text: &str) -> Result<u32, ValueError> {
    match count(text) {
        Ok(n) if (1..=MAX_TIMER_CACHE).contains(&n) => Ok(n),
        _ => Err(ValueError::NotATimerCacheSize),
    }
}

/// The most timers of a key group and clock held in memory: past it the
/// heads, one per group and clock, would hold state larger than memory
/// in memory.
pub(crate) const MAX_TIMER_CACHE: u32 = 1 << 16;

/// A memory size as Flink writes one: a whole number and an optional unit
/// (`b`, `k`/`kb`, `m`/`mb`, `g`/`gb`, `t`/`tb`, or spelled out as
/// `kibibytes` …; powers of 1024), at least 1 MiB.
pub(crate) fn memory_size(text: &str) -> Result<u64, ValueError> {
    let text = text.trim().to_ascii_lowercase();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| ValueError::NotAMemorySize)?;
    let shift = match unit.trim() {
        "" | "b" | "bytes" => 0,
        "k" | "kb" | "kibibytes" => 10,
        "m" | "mb" | "mebibytes" => 20,
        "g" | "gb" | "gibibytes" => 30,
        "t" | "tb" | "tebibytes" => 40,
        _ => return Err(ValueError::NotAMemorySize),
    };
    number
        .checked_mul(1u64 << shift)
        .filter(|bytes| *bytes >= 1 << 20)
        .ok_or(ValueError::NotAMemorySize)
}

fn kind(text: &str) -> Result<RestartStrategyKind, ValueError> {
    Ok(text.parse()?)
}

/// Both a key and its alias set to values that `same` says differ.
/// `error` with the values it shows masked (a conflict between two
/// spellings of a secret names the keys and where they came from only).
fn masked(error: ConfigError) -> ConfigError {
    match error {
        ConfigError::AliasConflict {
            key,
            mut value,
            alias,
            mut alias_value,
        } => {
            value.value = "******".to_owned();
            alias_value.value = "******".to_owned();
            ConfigError::AliasConflict {
                key,
                value,
                alias,
                alias_value,
            }
        }
        other => other,
    }
}

pub(crate) fn alias_conflict(
    source: &ConfigSource,
    key: &'static str,
    alias: &'static str,
    same: impl Fn(&str, &str) -> bool,
) -> Result<(), ConfigError> {
    match (source.get(key), source.get(alias)) {
        (Some(main), Some(other)) if !same(&main.value, &other.value) => {
            Err(ConfigError::AliasConflict {
                key,
                value: Box::new(main.clone()),
                alias,
                alias_value: Box::new(other.clone()),
            })
        }
        _ => Ok(()),
    }
}

impl ClusterConfig {
    /// Reads every known key from `source` (unset keys keep Flink's
    /// defaults), validates, and returns the configuration with warnings
    /// about keys nobody reads. Never panics, whatever the input.
    pub fn from_source(
        source: &ConfigSource,
    ) -> Result<(ClusterConfig, Vec<Warning>), ConfigError> {
        let reader = Reader { source };
        let mut config = ClusterConfig::default();

        let same_duration = |a: &str, b: &str| match (parse_duration(a), parse_duration(b)) {
            (Ok(a), Ok(b)) => a == b,
            _ => a.trim() == b.trim(),
        };
        alias_conflict(source, ASK_TIMEOUT, ASK_TIMEOUT_ALIAS, same_duration)?;
        alias_conflict(source, HA_TYPE, HA_TYPE_ALIAS, |a, b| {
            a.trim().eq_ignore_ascii_case(b.trim())
        })?;

        reader.set(&mut config.heartbeat_interval, HEARTBEAT_INTERVAL, duration)?;
        reader.set(&mut config.heartbeat_timeout, HEARTBEAT_TIMEOUT, duration)?;
        reader.set(
            &mut config.heartbeat_rpc_failure_threshold,
            HEARTBEAT_RPC_FAILURES,
            rpc_failures,
        )?;
        reader.set(&mut config.adoption_timeout, ADOPTION_TIMEOUT, |t| {
            duration(t).map(Some)
        })?;
        reader.set(&mut config.ask_timeout, ASK_TIMEOUT_ALIAS, duration)?;
        reader.set(&mut config.ask_timeout, ASK_TIMEOUT, duration)?;

        let restart = &mut config.restart;
        reader.set(&mut restart.kind, RESTART_TYPE, kind)?;
        reader.set(&mut restart.fixed_delay.attempts, FIXED_ATTEMPTS, count)?;
        reader.set(&mut restart.fixed_delay.delay, FIXED_DELAY, duration)?;
        let rate = &mut restart.failure_rate;
        reader.set(
            &mut rate.max_failures_per_interval,
            RATE_MAX_FAILURES,
            count,
        )?;
        reader.set(&mut rate.interval, RATE_INTERVAL, duration)?;
        reader.set(&mut rate.delay, RATE_DELAY, duration)?;
        let exp = &mut restart.exponential_delay;
        reader.set(&mut exp.initial_backoff, EXP_INITIAL, duration)?;
        reader.set(&mut exp.max_backoff, EXP_MAX, duration)?;
        reader.set(&mut exp.backoff_multiplier, EXP_MULTIPLIER, ratio)?;
        reader.set(
            &mut exp.reset_backoff_threshold,
            EXP_RESET_THRESHOLD,
            duration,
        )?;
        reader.set(&mut exp.jitter_factor, EXP_JITTER, ratio)?;
        reader.set(
            &mut exp.attempts_before_reset_backoff,
            EXP_ATTEMPTS,
            attempts,
        )?;

        reader.set(&mut config.task_slots, TASK_SLOTS, count)?;
        reader.set(
            &mut config.taskmanager_resource_id,
            TM_RESOURCE_ID,
            resource_id,
        )?;
        reader.set(&mut config.taskmanager_host, TM_HOST, optional_host)?;
        reader.set(&mut config.jobmanager_rpc_address, JM_ADDRESS, host)?;
        reader.set(&mut config.jobmanager_rpc_port, JM_PORT, port)?;
        reader.set(&mut config.taskmanager_rpc_port, TM_PORT, port)?;
        reader.set(&mut config.taskmanager_data_port, TM_DATA_PORT, port)?;
        let binds = &mut config.bind_ports;
        reader.set(&mut binds.jobmanager_rpc, JM_BIND_PORT, bind_port)?;
        reader.set(&mut binds.taskmanager_rpc, TM_BIND_PORT, bind_port)?;
        reader.set(&mut binds.taskmanager_data, TM_DATA_BIND_PORT, bind_port)?;
        reader.set(
            &mut config.buffers_per_channel,
            TM_BUFFERS_PER_CHANNEL,
            buffers,
        )?;
        reader.set(&mut config.rest_address, REST_ADDRESS, host)?;
        reader.set(&mut config.rest_bind_address, REST_BIND_ADDRESS, host)?;
        reader.set(&mut config.rest_port, REST_PORT, port)?;
        reader.set(&mut config.rest_token_file, REST_TOKEN_FILE, path)?;
        reader.set(
            &mut config.rest_read_access,
            REST_READ_ACCESS,
            ssl::read_access,
        )?;
        let tls = &mut config.ssl;
        reader.set(&mut tls.internal_enabled, SSL_INTERNAL_ENABLED, ssl::flag)?;
        reader.set(&mut tls.internal.certificate, SSL_INTERNAL_CERT, path)?;
        reader.set(&mut tls.internal.key, SSL_INTERNAL_KEY, path)?;
        reader.set(&mut tls.internal.ca, SSL_INTERNAL_CA, path)?;
        reader.set(&mut tls.rest_enabled, SSL_REST_ENABLED, ssl::flag)?;
        reader.set(
            &mut tls.rest_authentication,
            SSL_REST_AUTHENTICATION,
            ssl::flag,
        )?;
        reader.set(&mut tls.rest.certificate, SSL_REST_CERT, path)?;
        reader.set(&mut tls.rest.key, SSL_REST_KEY, path)?;
        reader.set(&mut tls.rest.ca, SSL_REST_CA, path)?;
        reader.set(&mut tls.policy.versions, SSL_PROTOCOL, ssl::protocols)?;
        reader.set(
            &mut tls.policy.cipher_suites,
            SSL_ALGORITHMS,
            ssl::algorithms,
        )?;
        reader.set(
            &mut tls.policy.verify_hostname,
            SSL_VERIFY_HOSTNAME,
            ssl::flag,
        )?;
        reader.set(&mut tls.reload_interval, SSL_RELOAD_INTERVAL, duration)?;
        reader.set(&mut tls.expiry_warning, SSL_EXPIRY_WARNING, duration)?;
        let files = &mut config.ssl.internal;
        reader.set(&mut files.keystore, SSL_INTERNAL_KEYSTORE, path)?;
        reader.set(
            &mut files.keystore_password,
            SSL_INTERNAL_KEYSTORE_PASSWORD,
            ssl::password,
        )?;
        reader.set(
            &mut files.key_password,
            SSL_INTERNAL_KEY_PASSWORD,
            ssl::password,
        )?;
        reader.set(
            &mut files.keystore_type,
            SSL_INTERNAL_KEYSTORE_TYPE,
            ssl::store_type,
        )?;
        reader.set(&mut files.truststore, SSL_INTERNAL_TRUSTSTORE, path)?;
        reader.set(
            &mut files.truststore_password,
            SSL_INTERNAL_TRUSTSTORE_PASSWORD,
            ssl::password,
        )?;
        reader.set(
            &mut files.truststore_type,
            SSL_INTERNAL_TRUSTSTORE_TYPE,
            ssl::store_type,
        )?;
        let files = &mut config.ssl.rest;
        reader.set(&mut files.keystore, SSL_REST_KEYSTORE, path)?;
        reader.set(
            &mut files.keystore_password,
            SSL_REST_KEYSTORE_PASSWORD,
            ssl::password,
        )?;
        reader.set(
            &mut files.key_password,
            SSL_REST_KEY_PASSWORD,
            ssl::password,
        )?;
        reader.set(
            &mut files.keystore_type,
            SSL_REST_KEYSTORE_TYPE,
            ssl::store_type,
        )?;
        reader.set(&mut files.truststore, SSL_REST_TRUSTSTORE, path)?;
        reader.set(
            &mut files.truststore_password,
            SSL_REST_TRUSTSTORE_PASSWORD,
            ssl::password,
        )?;
        reader.set(
            &mut files.truststore_type,
            SSL_REST_TRUSTSTORE_TYPE,
            ssl::store_type,
        )?;
        reader.set(
            &mut config.web_refresh_interval,
            WEB_REFRESH_INTERVAL,
            duration,
        )?;
        reader.set(&mut config.parallelism_default, PARALLELISM, count)?;
        reader.set(&mut config.max_parallelism, MAX_PARALLELISM, count)?;
        reader.set(&mut config.cluster_secret_file, SECRET_FILE, path)?;

        alias_conflict(source, CP_DIR, CP_DIR_ALIAS, |a, b| a.trim() == b.trim())?;
        let checkpointing = &mut config.checkpointing;
        if let Some(interval) = reader.get(CP_INTERVAL, duration)? {
            checkpointing.enable(interval);
        }
        let settings = &mut checkpointing.settings;
        reader.set(&mut settings.timeout, CP_TIMEOUT, duration)?;
        reader.set(&mut settings.min_pause, CP_MIN_PAUSE, duration)?;
        reader.set(&mut settings.max_concurrent, CP_MAX_CONCURRENT, count)?;
        reader.set(&mut settings.tolerable_failures, CP_TOLERABLE, count)?;
        reader.set(&mut settings.num_retained, CP_RETAINED, count)?;
        reader.set(&mut settings.mode, CP_MODE, crate::checkpointing::mode)?;
        alias_conflict(source, LOCAL_BACKUP, LOCAL_BACKUP_ALIAS, |a, b| {
            ssl::flag(a).ok() == ssl::flag(b).ok()
        })?;
        reader.set(&mut config.local_backup, LOCAL_BACKUP_ALIAS, ssl::flag)?;
        reader.set(&mut config.local_backup, LOCAL_BACKUP, ssl::flag)?;
        reader.set(&mut config.local_state_dir, LOCAL_STATE_DIRS, |text| {
            path(text.split(',').next().unwrap_or_default())
        })?;
        alias_conflict(source, STATE_BACKEND, STATE_BACKEND_ALIAS, |a, b| {
            state_backend(a).ok() == state_backend(b).ok()
        })?;
        reader.set(
            &mut config.state_backend,
            STATE_BACKEND_ALIAS,
            state_backend,
        )?;
        reader.set(&mut config.state_backend, STATE_BACKEND, state_backend)?;
        reader.set(&mut config.timers_on_disk, TIMER_SERVICE, timers_on_disk)?;
        reader.set(
            &mut config.timer_cache_size,
            TIMER_CACHE_SIZE,
            timer_cache_size,
        )?;
        reader.set(&mut config.managed_memory, MANAGED_MEMORY, memory_size)?;
        reader.set(&mut config.tmp_dir, IO_TMP_DIRS, |text| {
            path(text.split(',').next().unwrap_or_default())
        })?;
        // Incremental checkpoints are the disk-backed state's default, as
        // in Flink.
        if config.state_backend == StateBackendKind::Fjall
            && source.get(CP_INCREMENTAL).is_none()
            && source.get(CP_INCREMENTAL_ALIAS).is_none()
        {
            settings.incremental = true;
        }
        alias_conflict(source, CP_INCREMENTAL, CP_INCREMENTAL_ALIAS, |a, b| {
            ssl::flag(a).ok() == ssl::flag(b).ok()
        })?;
        reader.set(&mut settings.incremental, CP_INCREMENTAL_ALIAS, ssl::flag)?;
        reader.set(&mut settings.incremental, CP_INCREMENTAL, ssl::flag)?;
        reader.set(
            &mut checkpointing.dir,
            CP_DIR_ALIAS,
            crate::checkpointing::dir,
        )?;
        reader.set(&mut checkpointing.dir, CP_DIR, crate::checkpointing::dir)?;
        alias_conflict(source, SAVEPOINT_DIR, SAVEPOINT_DIR_ALIAS, |a, b| {
            a.trim() == b.trim()
        })?;
        reader.set(
            &mut checkpointing.savepoint_dir,
            SAVEPOINT_DIR_ALIAS,
            crate::checkpointing::dir,
        )?;
        reader.set(
            &mut checkpointing.savepoint_dir,
            SAVEPOINT_DIR,
            crate::checkpointing::dir,
        )?;

        // Flink's two spellings of the keys may both be given if they agree.
        alias_conflict(source, S3_ACCESS_KEY, S3_ACCESS_KEY_ALIAS, |a, b| {
            a.trim() == b.trim()
        })?;
        alias_conflict(source, S3_SECRET_KEY, S3_SECRET_KEY_ALIAS, |a, b| {
            a.trim() == b.trim()
        })
        .map_err(masked)?;
        crate::s3::read(&reader, &mut config.s3)?;

        config.ha = read_ha(source)?;
        config.validate()?;
        Ok((config, unknown_keys(source)))
    }
}

/// Delegates `high-availability.*` to [`HaConfig::from_pairs`], adding the
/// origin of the key its error names.
fn read_ha(source: &ConfigSource) -> Result<HaConfig, ConfigError> {
    HaConfig::from_pairs(
        source
            .iter()
            .map(|(key, entry)| (key, entry.value.as_str())),
    )
    .map_err(|error| {
        let key = match &error {
            ha::ConfigError::InvalidValue { key, .. }
            | ha::ConfigError::Inconsistent { key, .. } => Some(*key),
            _ => None,
        };
        let origin = key.and_then(|key| {
            let alias = (key == HA_TYPE).then_some(HA_TYPE_ALIAS);
            source
                .get(key)
                .or_else(|| alias.and_then(|alias| source.get(alias)))
                .map(|entry| entry.origin.clone())
        });
        ConfigError::Ha {
            origin,
            source: error,
        }
    })
}

/// A warning per key nobody reads, with a suggestion when one is close.
fn unknown_keys(source: &ConfigSource) -> Vec<Warning> {
    source
        .iter()
        .filter(|(key, _)| !keys::is_known(key))
        .map(|(key, entry)| Warning::UnknownKey {
            key: key.to_owned(),
            origin: entry.origin.clone(),
            suggestion: suggest(key),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_sizes_read_as_flink_writes_them() {
        assert_eq!(memory_size("512 mb"), Ok(512 << 20));
        assert_eq!(memory_size("1g"), Ok(1 << 30));
        assert_eq!(memory_size("2 GiBiBytes"), Ok(2 << 30));
        assert_eq!(memory_size("1048576"), Ok(1 << 20));
        for bad in [
            "",
            "mb",
            "1.5 gb",
            "12 parsecs",
            "-1 gb",
            "1 kb",
            "99999999999 tb",
        ] {
            assert_eq!(memory_size(bad), Err(ValueError::NotAMemorySize), "{bad:?}");
        }
    }

    #[test]
    fn the_disk_backed_state_defaults_to_incremental_checkpoints() {
        let read = |pairs: &[(&str, &str)]| {
            let mut source = ConfigSource::new();
            for (k, v) in pairs {
                source.apply_define(&format!("{k}={v}")).unwrap();
            }
            ClusterConfig::from_source(&source).map(|(c, _)| c)
        };
        let disk = read(&[("state.backend.type", "rocksdb")]).unwrap();
        assert_eq!(disk.state_backend, StateBackendKind::Fjall);
        assert!(disk.checkpointing.settings.incremental);
        let off = read(&[
            ("state.backend", "fjall"),
            ("execution.checkpointing.incremental", "false"),
        ])
        .unwrap();
        assert!(!off.checkpointing.settings.incremental);
        assert!(!read(&[]).unwrap().checkpointing.settings.incremental);
        let bad = read(&[("state.backend.type", "memory")])
            .unwrap_err()
            .to_string();
        assert!(
            bad.contains("state.backend.type") && bad.contains("expected hashmap"),
            "{bad}"
        );
        let conflict = read(&[
            ("state.backend.type", "hashmap"),
            ("state.backend", "rocksdb"),
        ])
        .unwrap_err()
        .to_string();
        assert!(conflict.contains("state.backend"), "{conflict}");
    }

    /// Flink's timer-service keys (its enum read in any case); a value
    /// that is neither is named with what is expected.
    #[test]
    fn the_timer_service_keys_are_read_as_flink_writes_them() {
        let read = |pairs: &[(&str, &str)]| {
            let mut source = ConfigSource::new();
            for (k, v) in pairs {
                source.apply_define(&format!("{k}={v}")).unwrap();
            }
            ClusterConfig::from_source(&source).map(|(c, _)| c)
        };
        let default = read(&[]).unwrap();
        assert!(default.timers_on_disk);
        assert_eq!(default.timer_cache_size, 128);
        let heap = read(&[
            ("state.backend.rocksdb.timer-service.factory", "HEAP"),
            ("state.backend.rocksdb.timer-service.cache-size", "16"),
        ])
        .unwrap();
        assert!(!heap.timers_on_disk);
        assert_eq!(heap.timer_cache_size, 16);
        let disk = read(&[("state.backend.rocksdb.timer-service.factory", "rocksdb")]).unwrap();
        assert!(disk.timers_on_disk);
        for (key, value, expected) in [
            (
                "state.backend.rocksdb.timer-service.factory",
                "disk",
                "expected ROCKSDB",
            ),
            (
                "state.backend.rocksdb.timer-service.cache-size",
                "0",
                "from 1 to 65536",
            ),
            (
                "state.backend.rocksdb.timer-service.cache-size",
                "many",
                "from 1 to 65536",
            ),
            (
                "state.backend.rocksdb.timer-service.cache-size",
                "4294967295",
                "from 1 to 65536",
            ),
        ] {
            let bad = read(&[(key, value)]).unwrap_err().to_string();
            assert!(bad.contains(key) && bad.contains(expected), "{bad}");
        }
    }

    #[test]
    fn attempts_accepts_infinite_and_numbers() {
        assert_eq!(attempts("infinite"), Ok(None));
        assert_eq!(attempts(" 7 "), Ok(Some(7)));
        assert!(attempts("-1").is_err());
        assert_eq!(path("  "), Ok(None));
    }
}
