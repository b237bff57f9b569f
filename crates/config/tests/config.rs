//! `ConfigSource` and `ClusterConfig::from_source` end to end.

use std::io::Write;
use std::time::Duration;

use holdfast_config::keys::{self, KEYS};
use holdfast_config::{
    ClusterConfig, ConfigError, ConfigSource, Origin, RestartStrategyKind, Warning,
};
use proptest::prelude::*;

fn with(pairs: &[(&str, &str)]) -> Result<(ClusterConfig, Vec<Warning>), ConfigError> {
    let mut source = ConfigSource::new();
    for (key, value) in pairs {
        source.set(*key, *value, Origin::Define);
    }
    ClusterConfig::from_source(&source)
}

fn error(pairs: &[(&str, &str)]) -> String {
    with(pairs).unwrap_err().to_string()
}

#[test]
fn flat_and_nested_yaml_give_the_same_keys() {
    let origin = || Origin::File("conf.yaml".into());
    let flat = ConfigSource::from_yaml_str(
        "heartbeat.timeout: 60 s\nrestart-strategy.fixed-delay.attempts: 3\n\
         high-availability.type: zookeeper\n",
        origin(),
    )
    .unwrap();
    let nested = ConfigSource::from_yaml_str(
        "heartbeat:\n  timeout: 60 s\nrestart-strategy:\n  fixed-delay:\n    attempts: 3\n\
         high-availability:\n  type: zookeeper\n",
        origin(),
    )
    .unwrap();
    assert_eq!(flat, nested);
    assert_eq!(flat.pairs()["restart-strategy.fixed-delay.attempts"], "3");
    assert!(
        ConfigSource::from_yaml_str("", origin())
            .unwrap()
            .is_empty()
    );
    assert!(ConfigSource::from_yaml_str("- a\n- b\n", origin()).is_err());
    assert!(ConfigSource::from_yaml_str("a: [1, 2]\n", origin()).is_err());
}

#[test]
fn defines_override_the_file_and_origins_are_kept() {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(file, "rest.port: 9000\nheartbeat.interval: 5 s").unwrap();
    let source = ConfigSource::load(
        Some(file.path()),
        &[
            "rest.port = 9001".to_owned(),
            "parallelism.default=4".to_owned(),
        ],
    )
    .unwrap();
    let rest = source.get("rest.port").unwrap();
    assert_eq!(
        (rest.value.as_str(), &rest.origin),
        ("9001", &Origin::Define)
    );
    assert_eq!(
        source.get("heartbeat.interval").unwrap().origin,
        Origin::File(file.path().to_owned())
    );
    let (config, warnings) = ClusterConfig::from_source(&source).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(config.rest_port, 9001);
    assert_eq!(config.parallelism_default, 4);
    assert_eq!(config.heartbeat_interval, Duration::from_secs(5));

    let mut bad = tempfile::NamedTempFile::new().unwrap();
    writeln!(bad, "heartbeat.interval: soon").unwrap();
    let source = ConfigSource::load(Some(bad.path()), &[]).unwrap();
    let message = ClusterConfig::from_source(&source).unwrap_err().to_string();
    assert!(message.contains("heartbeat.interval"), "{message}");
    assert!(message.contains("\"soon\""), "{message}");
    assert!(
        message.contains(&bad.path().display().to_string()),
        "{message}"
    );
    assert!(ConfigSource::load(None, &["no-equals".to_owned()]).is_err());
    assert!(ConfigSource::load(None, &["=value".to_owned()]).is_err());
}

#[test]
fn defaults_are_flinks() {
    let (config, warnings) = with(&[]).unwrap();
    assert!(warnings.is_empty());
    assert_eq!(config, ClusterConfig::default());
    assert_eq!(config.heartbeat_interval, Duration::from_secs(10));
    assert_eq!(config.heartbeat_timeout, Duration::from_secs(50));
    assert_eq!(config.ask_timeout, Duration::from_secs(10));
    assert_eq!(config.restart.kind, RestartStrategyKind::ExponentialDelay);
    assert_eq!(config.restart.fixed_delay.attempts, 1);
    assert_eq!(config.restart.fixed_delay.delay, Duration::from_secs(1));
    let rate = config.restart.failure_rate;
    assert_eq!(rate.max_failures_per_interval, 1);
    assert_eq!(rate.interval, Duration::from_secs(60));
    assert_eq!(rate.delay, Duration::from_secs(1));
    let exp = config.restart.exponential_delay;
    assert_eq!(exp.initial_backoff, Duration::from_secs(1));
    assert_eq!(exp.max_backoff, Duration::from_secs(60));
    assert_eq!(exp.backoff_multiplier, 1.5);
    assert_eq!(exp.reset_backoff_threshold, Duration::from_secs(3600));
    assert_eq!(exp.jitter_factor, 0.1);
    assert_eq!(exp.attempts_before_reset_backoff, None);
    assert_eq!(config.task_slots, 1);
    assert_eq!(config.jobmanager_rpc_address, "localhost");
    assert_eq!(config.jobmanager_rpc_port, 6123);
    assert_eq!(config.taskmanager_rpc_port, 0);
    assert_eq!(config.taskmanager_data_port, 0);
    assert_eq!(config.rest_address, "localhost");
    assert_eq!(config.rest_bind_address, "localhost");
    assert_eq!(config.rest_port, 8081);
    assert_eq!(config.parallelism_default, 1);
    assert_eq!(config.max_parallelism, 128);
    assert_eq!(config.cluster_secret_file, None);
}

/// The documented default of `high-availability.lease.server-staleness`
/// depends on the quorum: this value for several servers, else 0.
const STALENESS_DEFAULT: &str = "12 s for a quorum of several servers, else 0";

/// Setting every key — `high-availability.*` included — to its documented
/// default changes nothing. A key without a default (`unset`) is left out;
/// the one default that depends on other keys is checked in both cases.
#[test]
fn documented_defaults_parse_to_the_defaults() {
    let staleness = keys::spec(holdfast_types::ha::keys::LEASE_SERVER_STALENESS).unwrap();
    assert_eq!(staleness.default, STALENESS_DEFAULT);
    let pairs: Vec<(&str, &str)> = KEYS
        .iter()
        .filter(|spec| spec.default != "unset")
        .map(|spec| {
            // The default setup (embedded) has no quorum of several servers.
            let value = if spec.name == staleness.name {
                "0"
            } else {
                spec.default
            };
            (spec.name, value)
        })
        .collect();
    assert!(
        pairs
            .iter()
            .any(|(name, _)| name.starts_with("high-availability.zookeeper.client.")),
        "the HA keys are covered"
    );
    let (config, warnings) = with(&pairs).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(config, ClusterConfig::default());

    // A quorum of several servers: the documented 12 s is what an unset key
    // gives.
    let ensemble = [
        ("high-availability.type", "zookeeper"),
        (
            "high-availability.zookeeper.quorum",
            "zk1:2181,zk2:2181,zk3:2181",
        ),
    ];
    let (unset, _) = with(&ensemble).unwrap();
    let mut set = ensemble.to_vec();
    set.push((staleness.name, "12 s"));
    let (documented, _) = with(&set).unwrap();
    assert_eq!(documented, unset);
    assert_eq!(unset.ha.lease.server_staleness, Duration::from_secs(12));
}

/// Flink's `max-retry-attempts` is not read: a Flink configuration that
/// sets it loads, with the key reported as ignored.
#[test]
fn flinks_max_retry_attempts_is_ignored_with_a_warning() {
    let key = "high-availability.zookeeper.client.max-retry-attempts";
    assert!(!keys::is_known(key));
    let (config, warnings) = with(&[(key, "3"), ("heartbeat.timeout", "60 s")]).unwrap();
    assert_eq!(config.heartbeat_timeout, Duration::from_secs(60));
    let text: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    assert_eq!(text.len(), 1, "{text:?}");
    assert!(
        text[0].contains(key) && text[0].contains("is ignored"),
        "{text:?}"
    );
}

#[test]
fn every_key_is_read() {
    let (config, _) = with(&[
        ("restart-strategy.type", "fixed-delay"),
        ("restart-strategy.fixed-delay.attempts", "5"),
        (
            "restart-strategy.exponential-delay.attempts-before-reset-backoff",
            "7",
        ),
        ("taskmanager.numberOfTaskSlots", "8"),
        ("taskmanager.rpc.port", "7000"),
        ("taskmanager.data.port", "7001"),
        ("cluster.secret-file", "/etc/holdfast/secret"),
        ("high-availability", "zookeeper"),
        ("high-availability.zookeeper.quorum", "zk:2181"),
    ])
    .unwrap();
    assert_eq!(config.restart.kind, RestartStrategyKind::FixedDelay);
    assert_eq!(config.restart.fixed_delay.attempts, 5);
    assert_eq!(
        config
            .restart
            .exponential_delay
            .attempts_before_reset_backoff,
        Some(7)
    );
    assert_eq!(config.task_slots, 8);
    assert_eq!(config.taskmanager_rpc_port, 7000);
    assert_eq!(config.taskmanager_data_port, 7001);
    assert_eq!(
        config.cluster_secret_file.as_deref(),
        Some(std::path::Path::new("/etc/holdfast/secret"))
    );
    assert_eq!(config.ha.quorum.as_deref(), Some("zk:2181"));
    for (name, kind) in [
        ("disable", RestartStrategyKind::None),
        ("none", RestartStrategyKind::None),
        ("failurerate", RestartStrategyKind::FailureRate),
        ("Exponential-Delay", RestartStrategyKind::ExponentialDelay),
    ] {
        let (config, _) = with(&[("restart-strategy.type", name)]).unwrap();
        assert_eq!(config.restart.kind, kind, "{name}");
    }
}

#[test]
fn tls_keys_are_flinks_switches_and_holdfasts_pem_files() {
    let (config, _) = with(&[
        ("security.ssl.internal.enabled", "true"),
        (
            "security.ssl.internal.pem.certificate",
            "/etc/holdfast/node.pem",
        ),
        ("security.ssl.internal.pem.key", "/etc/holdfast/node.key"),
        ("security.ssl.internal.pem.ca", "/etc/holdfast/ca.pem"),
        ("security.ssl.rest.enabled", "TRUE"),
        ("security.ssl.rest.authentication-enabled", "true"),
        (
            "security.ssl.rest.pem.certificate",
            "/etc/holdfast/rest.pem",
        ),
        ("security.ssl.rest.pem.key", "/etc/holdfast/rest.key"),
        ("security.ssl.rest.pem.ca", "/etc/holdfast/rest-ca.pem"),
        ("security.ssl.protocol", "TLSv1.3"),
        ("security.ssl.algorithms", "TLS_AES_256_GCM_SHA384"),
        ("security.ssl.verify-hostname", "false"),
        ("security.ssl.reload-interval", "5 s"),
        ("security.ssl.expiry-warning", "7 d"),
        ("security.rest.read-access", "authenticated"),
    ])
    .unwrap();
    let ssl = &config.ssl;
    assert!(ssl.internal_enabled && ssl.rest_enabled && ssl.rest_authentication);
    assert_eq!(
        ssl.internal_files().ca.as_deref(),
        Some(std::path::Path::new("/etc/holdfast/ca.pem"))
    );
    assert_eq!(ssl.policy.versions, vec![holdfast_tls::TlsVersion::Tls13]);
    assert_eq!(ssl.policy.cipher_suites, vec!["TLS_AES_256_GCM_SHA384"]);
    assert!(!ssl.policy.verify_hostname);
    assert_eq!(ssl.reload_interval, Duration::from_secs(5));
    assert_eq!(ssl.expiry_warning, Duration::from_secs(7 * 86_400));
    assert_eq!(
        config.rest_read_access,
        holdfast_config::ReadAccess::Authenticated
    );
    assert_eq!(
        ssl.rest_client_certificates(),
        holdfast_tls::ClientCertificates::Required
    );
}

#[test]
fn tls_mistakes_are_named() {
    let on = ("security.ssl.internal.enabled", "true");
    let missing = error(&[on]);
    assert!(
        missing.contains("security.ssl.internal.pem.certificate")
            && missing.contains("security.ssl.internal.enabled"),
        "{missing}"
    );
    let flinks_default_suite =
        error(&[("security.ssl.algorithms", "TLS_RSA_WITH_AES_128_CBC_SHA")]);
    assert!(
        flinks_default_suite.contains("security.ssl.algorithms")
            && flinks_default_suite.contains("forward secrecy"),
        "{flinks_default_suite}"
    );
    let old = error(&[("security.ssl.protocol", "TLSv1")]);
    assert!(old.contains("TLSv1.2"), "{old}");
    let yes = error(&[("security.ssl.rest.enabled", "yes")]);
    assert!(
        yes.contains("security.ssl.rest.enabled") && yes.contains("true or false"),
        "{yes}"
    );
    let keystore = error(&[("security.ssl.rest.keystore", "/etc/flink/rest.p12")]);
    assert!(
        keystore.contains("security.ssl.rest.keystore-password must be set"),
        "{keystore}"
    );
    let jks = error(&[
        ("security.ssl.internal.keystore", "/etc/flink/node.jks"),
        ("security.ssl.internal.keystore-password", "changeit"),
        ("security.ssl.internal.keystore-type", "JKS"),
    ]);
    assert!(
        jks.contains("security.ssl.internal.keystore-type")
            && jks.contains("keytool -importkeystore"),
        "{jks}"
    );
    let two_passwords = error(&[
        ("security.ssl.internal.keystore", "/etc/flink/node.p12"),
        ("security.ssl.internal.keystore-password", "S7orePw"),
        ("security.ssl.internal.key-password", "K3yPw"),
    ]);
    assert!(
        two_passwords.contains("security.ssl.internal.key-password")
            && !two_passwords.contains("S7orePw")
            && !two_passwords.contains("K3yPw"),
        "{two_passwords}"
    );
    let both = error(&[
        ("security.ssl.rest.keystore", "/etc/flink/rest.p12"),
        ("security.ssl.rest.keystore-password", "store-pass"),
        (
            "security.ssl.rest.pem.certificate",
            "/etc/holdfast/rest.pem",
        ),
    ]);
    assert!(both.contains("set one"), "{both}");
    // A keystore stands in for the PEM certificate and key.
    let (config, _) = with(&[
        ("security.ssl.internal.enabled", "true"),
        ("security.ssl.internal.keystore", "/etc/flink/node.p12"),
        ("security.ssl.internal.keystore-password", "store-pass"),
        ("security.ssl.internal.key-password", "store-pass"),
        ("security.ssl.internal.truststore", "/etc/flink/trust.p12"),
        ("security.ssl.internal.truststore-password", "trust-pass"),
    ])
    .unwrap();
    let files = config.ssl.internal_files();
    assert_eq!(files.keystore.unwrap().password, "store-pass");
    assert!(
        !format!("{config:?}").contains("store-pass"),
        "passwords never in Debug"
    );
    let closed = error(&[("security.rest.read-access", "authenticated")]);
    assert!(closed.contains("no credential"), "{closed}");
    let mtls_without_tls = error(&[
        ("security.ssl.rest.authentication-enabled", "true"),
        ("security.ssl.rest.pem.ca", "/ca.pem"),
    ]);
    assert!(
        mtls_without_tls.contains("security.ssl.rest.enabled"),
        "{mtls_without_tls}"
    );
}

#[test]
fn checkpointing_is_off_until_an_interval_is_set_and_reads_flinks_keys() {
    use holdfast_runtime::checkpoint::{CheckpointConfig, CheckpointingMode};
    let (config, _) = with(&[]).unwrap();
    assert_eq!(config.checkpointing.coordinator(), None);
    let (config, warnings) = with(&[
        ("execution.checkpointing.interval", "2 s"),
        ("execution.checkpointing.timeout", "1 min"),
        ("execution.checkpointing.min-pause", "500 ms"),
        ("execution.checkpointing.max-concurrent-checkpoints", "2"),
        ("execution.checkpointing.tolerable-failed-checkpoints", "3"),
        ("execution.checkpointing.num-retained", "4"),
        ("execution.checkpointing.mode", "AT_LEAST_ONCE"),
        ("execution.checkpointing.incremental", "true"),
        ("state.checkpoints.dir", "file:///var/holdfast/chk"),
    ])
    .unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        config.checkpointing.coordinator(),
        Some(CheckpointConfig {
            interval: Duration::from_secs(2),
            timeout: Duration::from_secs(60),
            min_pause: Duration::from_millis(500),
            max_concurrent: 2,
            tolerable_failures: 3,
            num_retained: 4,
            mode: CheckpointingMode::AtLeastOnce,
            incremental: true,
        })
    );
    // Flink's older name, and a conflict between the two named.
    let (older, _) = with(&[
        ("execution.checkpointing.interval", "2 s"),
        ("state.backend.incremental", "TRUE"),
    ])
    .unwrap();
    assert!(older.checkpointing.coordinator().unwrap().incremental);
    let error = with(&[
        ("execution.checkpointing.incremental", "false"),
        ("state.backend.incremental", "true"),
    ])
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("execution.checkpointing.incremental")
            && error.contains("state.backend.incremental"),
        "{error}"
    );
    let error = with(&[("execution.checkpointing.incremental", "yes")])
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("execution.checkpointing.incremental"),
        "{error}"
    );
    assert_eq!(
        config.checkpointing.dir.map(|d| d.to_string()).as_deref(),
        Some("/var/holdfast/chk")
    );
    // The key and its deprecated alias may agree.
    let (config, _) = with(&[
        ("execution.checkpointing.dir", "/chk"),
        ("state.checkpoints.dir", "/chk"),
    ])
    .unwrap();
    assert_eq!(
        config.checkpointing.dir.map(|d| d.to_string()).as_deref(),
        Some("/chk")
    );
    // Where savepoints go, under Flink's current name or its old one.
    assert_eq!(config.checkpointing.savepoint_dir, None);
    for key in [
        "execution.checkpointing.savepoint-dir",
        "state.savepoints.dir",
    ] {
        let (config, warnings) = with(&[(key, "file:///var/holdfast/savepoints")]).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            config
                .checkpointing
                .savepoint_dir
                .map(|d| d.to_string())
                .as_deref(),
            Some("/var/holdfast/savepoints"),
            "{key}"
        );
    }
}

#[test]
fn the_rpc_failure_threshold_is_flinks_and_minus_one_turns_it_off() {
    let (config, _) = with(&[]).unwrap();
    assert_eq!(config.heartbeat_rpc_failure_threshold, Some(2));
    let (config, _) = with(&[("heartbeat.rpc-failure-threshold", "5")]).unwrap();
    assert_eq!(config.heartbeat_rpc_failure_threshold, Some(5));
    let (config, _) = with(&[("heartbeat.rpc-failure-threshold", "-1")]).unwrap();
    assert_eq!(config.heartbeat_rpc_failure_threshold, None);
}

#[test]
fn the_ask_timeout_alias() {
    let (config, _) = with(&[("akka.ask.timeout", "20 s")]).unwrap();
    assert_eq!(config.ask_timeout, Duration::from_secs(20));
    let (config, _) = with(&[("pekko.ask.timeout", "30 s")]).unwrap();
    assert_eq!(config.ask_timeout, Duration::from_secs(30));
    let (config, warnings) =
        with(&[("pekko.ask.timeout", "20000"), ("akka.ask.timeout", "20 s")]).unwrap();
    assert_eq!(config.ask_timeout, Duration::from_secs(20));
    assert!(warnings.is_empty());
    let message = error(&[("pekko.ask.timeout", "20 s"), ("akka.ask.timeout", "30 s")]);
    assert!(
        message.contains("pekko.ask.timeout = \"20 s\""),
        "{message}"
    );
    assert!(message.contains("akka.ask.timeout = \"30 s\""), "{message}");
    let message = error(&[
        ("high-availability", "zookeeper"),
        ("high-availability.type", "embedded"),
    ]);
    assert!(message.contains("high-availability.type"), "{message}");
}

#[test]
fn unknown_keys_are_warnings_with_suggestions() {
    let (_, warnings) = with(&[
        ("heartbeat.timeuot", "60 s"),
        ("completely.unrelated", "x"),
        ("high-availability.zookeeper.client.session-timeout", "40 s"),
    ])
    .unwrap();
    let text: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    assert_eq!(text.len(), 2, "{text:?}");
    assert!(text[0].contains("completely.unrelated"), "{text:?}");
    assert!(!text[0].contains("did you mean"), "{text:?}");
    assert!(
        text[1].contains("heartbeat.timeuot")
            && text[1].contains("did you mean heartbeat.timeout?"),
        "{text:?}"
    );
    assert!(text[1].contains("(from -D)"), "{text:?}");
    assert!(keys::is_known("akka.ask.timeout"));
}

/// Key/value pairs, and what the error message must contain.
type Case = (
    &'static [(&'static str, &'static str)],
    &'static [&'static str],
);

#[test]
fn every_rule_names_the_key_and_the_value() {
    let cases: &[Case] = &[
        (
            &[("heartbeat.interval", "soon")],
            &["heartbeat.interval", "\"soon\"", "-D"],
        ),
        (
            &[("heartbeat.rpc-failure-threshold", "0")],
            &["heartbeat.rpc-failure-threshold", "\"0\"", "or -1 (off)"],
        ),
        (
            &[("execution.checkpointing.interval", "5 ms")],
            &["execution.checkpointing.interval = 5ms", "at least 10ms"],
        ),
        (
            &[
                ("execution.checkpointing.interval", "1 s"),
                ("execution.checkpointing.num-retained", "0"),
            ],
            &["execution.checkpointing.num-retained = 0"],
        ),
        (
            &[("execution.checkpointing.mode", "twice")],
            &[
                "execution.checkpointing.mode",
                "EXACTLY_ONCE or AT_LEAST_ONCE",
            ],
        ),
        (
            &[("state.checkpoints.dir", "hdfs://nn/chk")],
            &["state.checkpoints.dir", "`hdfs` scheme is not supported"],
        ),
        (
            &[("execution.checkpointing.dir", "s3://Bucket/chk")],
            &["execution.checkpointing.dir", "bucket name"],
        ),
        (
            &[("s3.endpoint", "127.0.0.1:8333")],
            &["s3.endpoint", "http://host:port"],
        ),
        (
            &[("s3.retry.limit", "many")],
            &["s3.retry.limit", "retry count"],
        ),
        (
            &[
                ("execution.checkpointing.dir", "/a"),
                ("state.checkpoints.dir", "/b"),
            ],
            &[
                "execution.checkpointing.dir",
                "state.checkpoints.dir",
                "differ",
            ],
        ),
        (
            &[
                ("execution.checkpointing.savepoint-dir", "/a"),
                ("state.savepoints.dir", "/b"),
            ],
            &[
                "execution.checkpointing.savepoint-dir",
                "state.savepoints.dir",
                "differ",
            ],
        ),
        (
            &[("execution.checkpointing.savepoint-dir", "hdfs://nn/sp")],
            &[
                "execution.checkpointing.savepoint-dir",
                "`hdfs` scheme is not supported",
            ],
        ),
        (
            &[("heartbeat.timeout", "10 s")],
            &["heartbeat.timeout = 10s", "heartbeat.interval = 10s"],
        ),
        (
            &[("heartbeat.interval", "0")],
            &["heartbeat.interval = 0ns", "more than 0"],
        ),
        (
            &[("pekko.ask.timeout", "0 s")],
            &["pekko.ask.timeout", "more than 0"],
        ),
        (
            &[("taskmanager.numberOfTaskSlots", "0")],
            &["taskmanager.numberOfTaskSlots = 0"],
        ),
        (
            &[("taskmanager.numberOfTaskSlots", "-2")],
            &["taskmanager.numberOfTaskSlots", "\"-2\""],
        ),
        (
            &[("parallelism.default", "0")],
            &["parallelism.default = 0"],
        ),
        (
            &[("pipeline.max-parallelism", "0")],
            &["pipeline.max-parallelism = 0"],
        ),
        (
            &[("pipeline.max-parallelism", "40000")],
            &["pipeline.max-parallelism", "40000", "32768"],
        ),
        (
            &[("pipeline.max-parallelism", "many")],
            &["pipeline.max-parallelism", "\"many\""],
        ),
        (
            &[("rest.port", "70000")],
            &["rest.port", "\"70000\"", "0 to 65535"],
        ),
        (&[("rest.port", "0")], &["rest.port = 0"]),
        (
            &[("taskmanager.data.port", "65536")],
            &["taskmanager.data.port", "\"65536\"", "0 to 65535"],
        ),
        (
            &[
                ("taskmanager.data.port", "7000"),
                ("taskmanager.rpc.port", "7000"),
            ],
            &[
                "taskmanager.data.port = 7000",
                "taskmanager.rpc.port is 7000",
            ],
        ),
        (
            &[("jobmanager.rpc.port", "0")],
            &["jobmanager.rpc.port = 0"],
        ),
        (
            &[("jobmanager.rpc.address", " ")],
            &["jobmanager.rpc.address", "host name"],
        ),
        (
            &[(
                "restart-strategy.exponential-delay.backoff-multiplier",
                "0.5",
            )],
            &["backoff-multiplier = 0.5", "at least 1"],
        ),
        (
            &[(
                "restart-strategy.exponential-delay.backoff-multiplier",
                "inf",
            )],
            &["backoff-multiplier = inf"],
        ),
        (
            &[("restart-strategy.exponential-delay.jitter-factor", "1.5")],
            &["jitter-factor = 1.5", "[0, 1]"],
        ),
        (
            &[("restart-strategy.exponential-delay.jitter-factor", "NaN")],
            &["jitter-factor = NaN"],
        ),
        (
            &[("restart-strategy.exponential-delay.max-backoff", "500 ms")],
            &["max-backoff = 500ms", "initial-backoff = 1s"],
        ),
        (
            &[(
                "restart-strategy.failure-rate.max-failures-per-interval",
                "0",
            )],
            &["max-failures-per-interval = 0"],
        ),
        (
            &[("restart-strategy.type", "sometimes")],
            &["restart-strategy.type", "\"sometimes\"", "fixed-delay"],
        ),
        (
            &[(
                "restart-strategy.exponential-delay.attempts-before-reset-backoff",
                "lots",
            )],
            &["attempts-before-reset-backoff", "\"lots\"", "infinite"],
        ),
        (
            &[("high-availability.zookeeper.client.session-timeout", "soon")],
            &[
                "high-availability.zookeeper.client.session-timeout",
                "\"soon\"",
                "(from -D)",
            ],
        ),
        (
            &[("high-availability.type", "zookeeper")],
            &["high-availability.zookeeper.quorum"],
        ),
    ];
    for (pairs, needles) in cases {
        let message = error(pairs);
        for needle in *needles {
            assert!(
                message.contains(needle),
                "{pairs:?}: {message:?} lacks {needle:?}"
            );
        }
    }
}

fn key() -> impl Strategy<Value = String> {
    let known: Vec<String> = keys::all_names().map(str::to_owned).collect();
    prop_oneof![proptest::sample::select(known), "[a-z.A-Z-]{0,40}"]
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9]{0,12}(\\.[0-9]{0,4})? ?(ms|s|min|h|d|)",
        "(-|\\+)?[0-9eE.]{0,30}",
        "(none|fixed-delay|zookeeper|embedded|true|false|lease|NaN|inf|infinite|localhost| |/x|)",
        "\\PC{0,30}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn from_source_never_panics(pairs in proptest::collection::vec((key(), value()), 0..12)) {
        let mut source = ConfigSource::new();
        for (key, value) in &pairs {
            source.set(key.clone(), value.clone(), Origin::Define);
        }
        match ClusterConfig::from_source(&source) {
            Ok((config, _)) => prop_assert!(config.validate().is_ok()),
            Err(error) => prop_assert!(!error.to_string().is_empty()),
        }
    }

    #[test]
    fn yaml_loading_never_panics(text in "\\PC{0,200}") {
        let _ = ConfigSource::from_yaml_str(&text, Origin::Define);
    }
}

#[test]
fn s3_keys_under_either_spelling_with_secrets_never_shown() {
    let (config, warnings) = with(&[
        ("s3.endpoint", "http://127.0.0.1:8333/"),
        ("s3.endpoint.region", "eu-west-1"),
        ("s3.access.key", "AKIDEXAMPLE"),
        ("s3.secret.key", "the-secret"),
        ("s3.path.style.access", "true"),
        ("s3.connection.timeout", "5 s"),
        ("s3.retry.limit", "3"),
        ("s3.retry.deadline", "20 s"),
        ("execution.checkpointing.dir", "s3a://bucket/checkpoints/"),
    ])
    .unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let s3 = &config.s3;
    assert_eq!(s3.endpoint.as_deref(), Some("http://127.0.0.1:8333"));
    assert_eq!(s3.region.as_deref(), Some("eu-west-1"));
    assert_eq!(s3.access_key.as_deref(), Some("AKIDEXAMPLE"));
    assert_eq!(
        s3.secret_key.as_ref().map(|s| s.expose()),
        Some("the-secret")
    );
    assert!(s3.path_style_access);
    assert_eq!(s3.request_timeout, Duration::from_secs(5));
    assert_eq!(
        (s3.max_retries, s3.retry_deadline),
        (3, Duration::from_secs(20))
    );
    assert!(!format!("{config:?}").contains("the-secret"));
    assert_eq!(
        config.checkpointing.dir.map(|d| d.to_string()).as_deref(),
        Some("s3://bucket/checkpoints")
    );

    // Both spellings: they must agree; a conflict names keys, not secrets.
    let message = error(&[
        ("s3.secret-key", "one-secret"),
        ("s3.secret.key", "other-secret"),
    ]);
    assert!(
        message.contains("s3.secret-key") && message.contains("s3.secret.key"),
        "{message}"
    );
    assert!(
        !message.contains("one-secret") && !message.contains("other-secret"),
        "{message}"
    );
    let (config, _) = with(&[("s3.access-key", "A"), ("s3.access.key", "A")]).unwrap();
    assert_eq!(config.s3.access_key.as_deref(), Some("A"));
}
