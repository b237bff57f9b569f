//! Records what contenders and observers saw, on one clock.

use std::sync::{Arc, Mutex};

use holdfast_types::sync::lock;

use crate::backend::Backend;
use crate::election::{LeaderElection, LeadershipEvent};
use crate::retrieval::{LeaderRetrieval, RetrievalEvent};
use crate::time::{MonoTime, Runtime};

/// One recorded observation.
#[derive(Clone, Debug, PartialEq)]
pub enum Recorded {
    /// A contender's grant or revocation.
    Leadership(String, LeadershipEvent),
    /// An observer's leader change.
    Retrieval(String, RetrievalEvent, MonoTime),
}

/// Collects events from many contenders and observers, in arrival order.
#[derive(Clone, Debug, Default)]
pub struct Recorder {
    events: Arc<Mutex<Vec<Recorded>>>,
}

impl Recorder {
    /// Records every grant and revocation of `election` as `name`'s.
    pub fn election<B: Backend>(&self, name: &str, election: &LeaderElection<B>) {
        let mut events = election.subscribe();
        let (name, sink) = (name.to_owned(), self.events.clone());
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                lock(&sink).push(Recorded::Leadership(name.clone(), event));
            }
        });
    }

    /// Records every change `retrieval` reports as `name`'s.
    pub fn retrieval(&self, name: &str, retrieval: &LeaderRetrieval, runtime: Arc<dyn Runtime>) {
        let mut events = retrieval.subscribe();
        let (name, sink) = (name.to_owned(), self.events.clone());
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                lock(&sink).push(Recorded::Retrieval(name.clone(), event, runtime.now()));
            }
        });
    }

    /// Everything recorded so far.
    pub fn all(&self) -> Vec<Recorded> {
        lock(&self.events).clone()
    }

    /// The revocations recorded for `name`.
    pub fn revocations(&self, name: &str) -> Vec<LeadershipEvent> {
        self.leadership(name)
            .into_iter()
            .filter(|event| matches!(event, LeadershipEvent::Revoked { .. }))
            .collect()
    }

    /// The grants recorded for `name`.
    pub fn grants(&self, name: &str) -> Vec<LeadershipEvent> {
        self.leadership(name)
            .into_iter()
            .filter(|event| matches!(event, LeadershipEvent::Granted { .. }))
            .collect()
    }

    fn leadership(&self, name: &str) -> Vec<LeadershipEvent> {
        lock(&self.events)
            .iter()
            .filter_map(|recorded| match recorded {
                Recorded::Leadership(who, event) if who == name => Some(*event),
                _ => None,
            })
            .collect()
    }

    /// The retrieval events recorded for `name`.
    pub fn retrievals(&self, name: &str) -> Vec<RetrievalEvent> {
        lock(&self.events)
            .iter()
            .filter_map(|recorded| match recorded {
                Recorded::Retrieval(who, event, _) if who == name => Some(event.clone()),
                _ => None,
            })
            .collect()
    }
}
