//! `holdfast ha inspect`: what an election looks like right now.

use anyhow::{Context, Result};
use holdfast_ha::LeaderRecord;
use holdfast_ha::backend::{Backend, CoordError, Session};
use holdfast_ha::config::HaConfig;
use holdfast_ha::election::{sequence, sorted_latch_nodes};
use holdfast_ha::isolation::CoordinationRuntime;
use holdfast_ha_zookeeper::ZkBackend;
use serde_json::json;

/// Reads and prints the election under `base`.
pub async fn run(
    coordination: &CoordinationRuntime,
    config: &HaConfig,
    base: &str,
    as_json: bool,
) -> Result<()> {
    let backend = ZkBackend::from_config(config).context("configuring ZooKeeper")?;
    let latch = format!("{base}/leader/latch");
    let info_path = format!("{base}/leader/connection_info");
    let report = coordination
        .spawn(async move {
            let session = backend.connect().await?;
            let names = match session.children(&latch).await {
                Err(CoordError::NoNode(_)) => Vec::new(),
                other => other?,
            };
            let mut participants = Vec::new();
            for name in sorted_latch_nodes(&names) {
                if let (Some((data, stat)), _) =
                    session.get(&format!("{latch}/{name}"), false).await?
                {
                    participants.push((
                        name,
                        String::from_utf8_lossy(&data).into_owned(),
                        stat.ephemeral_owner,
                    ));
                }
            }
            let leader = session.get(&info_path, false).await?.0;
            let negotiated = session.timeout();
            session.close().await;
            Ok::<_, CoordError>((participants, leader, negotiated))
        })
        .await?
        .context("reading the election from ZooKeeper")?;
    let (participants, leader, negotiated) = report;
    let lease = config.lease.lease_length(negotiated);
    let probe = config.lease.probe_interval(negotiated);
    let leader = leader.map(|(data, stat)| match LeaderRecord::decode(&data) {
        Ok(record) => Ok(record.at_epoch(holdfast_types::Epoch(stat.czxid))),
        Err(error) => Err(error.to_string()),
    });
    if as_json {
        let participants: Vec<_> = participants
            .iter()
            .map(|(name, data, owner)| json!({"node": name, "sequence": sequence(name), "contender": data, "session": format!("{owner:#x}")}))
            .collect();
        let leader = match &leader {
            Some(Ok(info)) => {
                json!({"address": info.address, "epoch": info.epoch.0, "session": info.session.to_string(), "contender": info.contender.0})
            }
            Some(Err(error)) => json!({"error": error}),
            None => serde_json::Value::Null,
        };
        println!(
            "{}",
            json!({"election": base, "quorum": config.quorum, "participants": participants, "leader": leader,
                   "timing": {"requested_session_timeout_ms": config.session_timeout.as_millis() as u64,
                              "negotiated_session_timeout_ms": negotiated.as_millis() as u64,
                              "lease_ms": lease.as_millis() as u64, "probe_interval_ms": probe.as_millis() as u64,
                              "policy": config.policy.name()}})
        );
        return Ok(());
    }
    println!("election     {base}");
    println!("quorum       {}", config.quorum.as_deref().unwrap_or("-"));
    match &leader {
        Some(Ok(info)) => println!(
            "leader       {} (contender {}, epoch {}, session {})",
            info.address, info.contender, info.epoch, info.session
        ),
        Some(Err(error)) => println!("leader       unreadable: {error}"),
        None => println!("leader       none published"),
    }
    println!("participants {}", participants.len());
    for (position, (name, data, owner)) in participants.iter().enumerate() {
        let role = if position == 0 {
            "first in line"
        } else {
            "waiting"
        };
        println!("  {name}  contender {data}  session {owner:#x}  {role}");
    }
    println!(
        "timing       session timeout {:?} requested, {:?} negotiated; lease {:?}; probe every {:?}; policy {}",
        config.session_timeout, negotiated, lease, probe, config.policy
    );
    Ok(())
}
