//! Runs one schedule and collects what happened.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use holdfast_ha::connection::{Connection, ConnectionOptions};
use holdfast_ha::election::{ElectionOptions, LeaderElection, LeadershipEvent};
use holdfast_ha::embedded::{EmbeddedBackend, EmbeddedCluster, EmbeddedOptions};
use holdfast_ha::retrieval::{LeaderRetrieval, RetrievalEvent};
use holdfast_ha::{Epoch, ErrorPolicy, MonoTime, Runtime, TokioRuntime};
use holdfast_types::sync::lock;

use super::schedule::{Fault, Schedule};

const BASE: &str = "/sim";
const SAMPLE: Duration = Duration::from_millis(50);

/// Everything the invariants look at.
#[derive(Debug, Default)]
pub struct Trace {
    /// `(contender, event)` in order.
    pub leadership: Vec<(usize, LeadershipEvent)>,
    /// `(observer, event, at)` in order.
    pub retrieval: Vec<(usize, RetrievalEvent, MonoTime)>,
    /// Sampled `is_leader()` of every contender: `(at, leaders)`, where more
    /// than one leader is a violation.
    pub samples_with_two_leaders: Vec<(MonoTime, Vec<usize>)>,
    /// Link cuts as they happened: `(process, from, to)` (`to` None: never healed).
    pub cuts: Vec<(usize, MonoTime, Option<MonoTime>)>,
    /// Graceful leaves: `(contender, at)`.
    pub leaves: Vec<(usize, MonoTime)>,
}

fn name(process: usize) -> String {
    format!("p{process}")
}

/// Runs `schedule` to its horizon on the current (paused) runtime.
pub async fn run(schedule: &Schedule) -> Trace {
    let runtime: Arc<dyn Runtime> = Arc::new(TokioRuntime::seeded(schedule.seed));
    let cluster = EmbeddedCluster::new(runtime.clone());
    let options = EmbeddedOptions {
        session_timeout: schedule.session_timeout,
        ..EmbeddedOptions::default()
    };
    let trace = Arc::new(Mutex::new(Trace::default()));
    let connect = |process: usize| {
        let connection_options = ConnectionOptions {
            policy: ErrorPolicy::Lease,
            retry_wait: Duration::from_millis(500),
            ..ConnectionOptions::default()
        };
        Connection::start(
            cluster.backend_on(&name(process), options.clone()),
            runtime.clone(),
            connection_options,
        )
    };
    let contend = |process: usize, connection: &Connection<EmbeddedBackend>| {
        let mut election_options = ElectionOptions::under(BASE, name(process), name(process));
        election_options.retry = Duration::from_millis(100);
        let election = LeaderElection::start(connection.clone(), election_options);
        let mut events = election.subscribe();
        let trace = trace.clone();
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                lock(&trace).leadership.push((process, event));
            }
        });
        election
    };
    let connections: Vec<_> = (0..schedule.contenders + schedule.observers)
        .map(connect)
        .collect();
    let mut elections: Vec<Option<LeaderElection<EmbeddedBackend>>> = (0..schedule.contenders)
        .map(|process| Some(contend(process, &connections[process])))
        .collect();
    let _observers: Vec<LeaderRetrieval> = (schedule.contenders..connections.len())
        .map(|process| {
            let retrieval = LeaderRetrieval::start(
                connections[process].clone(),
                &format!("{BASE}/leader/connection_info"),
            );
            let mut events = retrieval.subscribe();
            let (trace, runtime) = (trace.clone(), runtime.clone());
            tokio::spawn(async move {
                while let Some(event) = events.recv().await {
                    lock(&trace).retrieval.push((process, event, runtime.now()));
                }
            });
            retrieval
        })
        .collect();

    // Timed actions: (at, action).
    enum Action {
        Cut(usize),
        Heal(usize),
        Leave(usize),
        Join(usize),
    }
    let mut actions: Vec<(Duration, Action)> = Vec::new();
    for (process, fault) in &schedule.faults {
        match *fault {
            Fault::Cut { at, length } => {
                actions.push((at, Action::Cut(*process)));
                if let Some(length) = length {
                    actions.push((at + length, Action::Heal(*process)));
                }
            }
            Fault::Rejoin { at, after } => {
                actions.push((at, Action::Leave(*process)));
                actions.push((at + after, Action::Join(*process)));
            }
        }
    }
    actions.sort_by_key(|(at, _)| *at);
    let start = runtime.now();
    let mut next_action = actions.into_iter().peekable();
    let mut open_cuts: Vec<Option<usize>> = vec![None; connections.len()];
    let mut tick = start;
    while tick.since(start) < schedule.horizon {
        while let Some((at, _)) = next_action.peek() {
            if start.plus(*at) > tick {
                break;
            }
            let (_, action) = next_action.next().expect("peeked");
            let now = runtime.now();
            match action {
                Action::Cut(process) => {
                    cluster.cut_link(&name(process));
                    let mut trace = lock(&trace);
                    open_cuts[process] = Some(trace.cuts.len());
                    trace.cuts.push((process, now, None));
                }
                Action::Heal(process) => {
                    cluster.heal_link(&name(process));
                    if let Some(index) = open_cuts[process].take() {
                        lock(&trace).cuts[index].2 = Some(now);
                    }
                }
                Action::Leave(process) => {
                    if let Some(election) = elections[process].take() {
                        lock(&trace).leaves.push((process, now));
                        election.close().await;
                    }
                }
                Action::Join(process) => {
                    if elections[process].is_none() {
                        elections[process] = Some(contend(process, &connections[process]));
                    }
                }
            }
        }
        let leaders: Vec<usize> = elections
            .iter()
            .enumerate()
            .filter(|(_, election)| {
                election
                    .as_ref()
                    .is_some_and(|election| election.is_leader())
            })
            .map(|(process, _)| process)
            .collect();
        if leaders.len() > 1 {
            lock(&trace)
                .samples_with_two_leaders
                .push((runtime.now(), leaders));
        }
        tick = tick.plus(SAMPLE);
        runtime.sleep_until(tick).await;
    }
    std::mem::take(&mut *lock(&trace))
}

/// The epoch of a leadership event.
pub fn epoch_of(event: &LeadershipEvent) -> Epoch {
    match event {
        LeadershipEvent::Granted { epoch, .. } | LeadershipEvent::Revoked { epoch, .. } => *epoch,
    }
}
