//! Starts a real ZooKeeper with the test kit and keeps it running until
//! standard input closes, for experiments by hand and for the kit's own
//! clean-up tests.
//!
//! ```text
//! holdfast-testkit-zk [--members N] [--tick-ms MS] [--panic]
//! ```
//!
//! Prints one line per member, `member ID pid PID client ADDR direct ADDR`,
//! then `connect CONNECT_STRING`. With `--panic` it panics right after
//! printing: the kit must then kill every JVM it started.

use std::io::{BufRead, Write};
use std::time::Duration;

use holdfast_testkit::{ZkCluster, ZkClusterConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut members = 1;
    let mut tick = Duration::from_millis(200);
    let mut panic = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--members" => members = args.next().ok_or("--members needs a number")?.parse()?,
            "--tick-ms" => {
                tick =
                    Duration::from_millis(args.next().ok_or("--tick-ms needs a number")?.parse()?)
            }
            "--panic" => panic = true,
            other => return Err(format!("unknown argument {other:?}; see the file's docs").into()),
        }
    }
    let runtime = tokio::runtime::Runtime::new()?;
    let config = ZkClusterConfig::ensemble(members).with_tick_time(tick);
    let cluster = runtime.block_on(ZkCluster::start(config))?;
    let mut out = std::io::stdout().lock();
    for id in cluster.members() {
        let pid = cluster
            .pid(id)?
            .map(|pid| pid.to_string())
            .unwrap_or_default();
        writeln!(
            out,
            "member {id} pid {pid} client {} direct {}",
            cluster.member_address(id)?,
            cluster.direct_member_address(id)?
        )?;
    }
    writeln!(out, "connect {}", cluster.connect_string())?;
    out.flush()?;
    drop(out);
    if panic {
        panic!("--panic: panicking while the cluster runs");
    }
    // Hold until standard input closes (or the process is killed).
    for line in std::io::stdin().lock().lines() {
        if line.is_err() {
            break;
        }
    }
    drop(cluster);
    Ok(())
}
