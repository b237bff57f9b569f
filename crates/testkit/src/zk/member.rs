//! One member of a [`ZkCluster`](super::ZkCluster): its ports, directory,
//! client route and process.

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use holdfast_types::sync::lock;

use super::config::MemberPorts;
use super::process::ServerProcess;
use crate::proxy::Route;

/// What the cluster keeps per member.
#[derive(Debug)]
pub(crate) struct Member {
    pub(crate) id: u32,
    pub(crate) ports: MemberPorts,
    pub(crate) dir: PathBuf,
    pub(crate) client_route: Route,
    process: Mutex<Option<ServerProcess>>,
}

impl Member {
    pub(crate) fn new(id: u32, ports: MemberPorts, dir: PathBuf, client_route: Route) -> Self {
        Member {
            id,
            ports,
            dir,
            client_route,
            process: Mutex::new(None),
        }
    }

    /// The member's process slot (`None` while it is stopped).
    pub(crate) fn process(&self) -> MutexGuard<'_, Option<ServerProcess>> {
        lock(&self.process)
    }

    pub(crate) fn zoo_cfg(&self) -> PathBuf {
        self.dir.join("zoo.cfg")
    }

    pub(crate) fn log(&self) -> PathBuf {
        self.dir.join("server.log")
    }
}
