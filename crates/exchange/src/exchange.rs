//! [`Exchange`]: one TaskManager's data plane — its partition registry,
//! its data server, and the factory of writers and gates.

use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Weak};
use std::time::Instant;

use holdfast_auth::{Auth, ClientAuth, PeerId, Verifier, VerifyConfig};
use holdfast_runtime::ids::JobId;
use holdfast_runtime::wiring::DataLocation;
use tokio::net::TcpListener;
use tokio::sync::Notify;

use crate::error::ExchangeError;
use crate::gate::{GateChannel, InputGate};
use crate::ids::{ChannelRef, ChannelSpec, PartitionId, describe};
use crate::interrupt::{Interrupt, InterruptWake};
use crate::metrics::{Counters, ExchangeMetrics};
use crate::net::{Net, client, server};
use crate::options::ExchangeOptions;
use crate::pipe::{Pipe, Waker};
use crate::registry::Registry;
use crate::signal::GateSignal;
use crate::wire::frame::BATCH_OVERHEAD;
use crate::writer::PartitionWriter;

/// One TaskManager's exchange. Cheap to clone (one `Arc`); the data server
/// stops when the last clone is dropped.
#[derive(Clone)]
pub struct Exchange {
    inner: Arc<Inner>,
}

struct Inner {
    options: ExchangeOptions,
    location: DataLocation,
    address: Option<SocketAddr>,
    registry: Arc<Registry>,
    counters: Arc<Counters>,
    /// `None` for an in-memory exchange.
    net: Option<Arc<Net>>,
    shutdown: Arc<Notify>,
}

impl Exchange {
    /// Validates `options`, binds the data server and starts it on the
    /// current tokio runtime (which also runs the remote channels' tasks).
    pub async fn start(options: ExchangeOptions) -> Result<Exchange, ExchangeError> {
        options.validate()?;
        let listener =
            TcpListener::bind(options.bind)
                .await
                .map_err(|source| ExchangeError::Bind {
                    addr: options.bind,
                    source,
                })?;
        let address = listener
            .local_addr()
            .map_err(|source| ExchangeError::Bind {
                addr: options.bind,
                source,
            })?;
        let peer = PeerId::new(options.task_manager.as_str()).map_err(|error| {
            ExchangeError::InvalidOptions {
                key: "task_manager",
                reason: error.to_string(),
            }
        })?;
        let verifier = match &options.auth {
            Auth::Secret(secret) => {
                Some(Verifier::new(Arc::clone(secret), &VerifyConfig::default()))
            }
            Auth::Disabled => None,
        };
        let counters = Arc::new(Counters::default());
        let registry = Registry::new(
            options.buffers_per_channel,
            Arc::clone(&counters),
            options.request_timeout.saturating_mul(2),
        );
        let net = Arc::new(Net::new(
            tokio::runtime::Handle::current(),
            options.clone(),
            ClientAuth::new(&options.auth, peer),
            verifier,
            Arc::clone(&registry),
            Arc::clone(&counters),
        ));
        let shutdown = Arc::new(Notify::new());
        tokio::spawn(server::accept_loop(
            Arc::clone(&net),
            listener,
            Arc::clone(&shutdown),
        ));
        tracing::info!(task_manager = %options.task_manager, %address, "data exchange listening");
        let location = DataLocation {
            task_manager: options.task_manager.clone(),
            address: options.advertised(options.advertise_port.unwrap_or(address.port())),
        };
        Ok(Exchange::from_inner(Inner {
            options,
            location,
            address: Some(address),
            registry,
            counters,
            net: Some(net),
            shutdown,
        }))
    }

    /// An in-memory exchange for TaskManager `task_manager` (tests, a
    /// single process): no server, no runtime needed; remote channels and
    /// consumers fail with [`ExchangeError::RemoteUnsupported`].
    pub fn local(task_manager: &str, buffers_per_channel: usize) -> Exchange {
        Exchange::in_memory(ExchangeOptions {
            buffers_per_channel: buffers_per_channel.max(1),
            ..ExchangeOptions::new(task_manager, Auth::Disabled)
        })
    }

    /// Like [`local`](Self::local), with every option (those of the
    /// network are ignored) after validating them.
    pub fn local_with_options(options: ExchangeOptions) -> Result<Exchange, ExchangeError> {
        options.validate()?;
        Ok(Exchange::in_memory(options))
    }

    fn in_memory(options: ExchangeOptions) -> Exchange {
        let counters = Arc::new(Counters::default());
        let registry = Registry::new(
            options.buffers_per_channel,
            Arc::clone(&counters),
            options.request_timeout.saturating_mul(2),
        );
        Exchange::from_inner(Inner {
            location: DataLocation {
                task_manager: options.task_manager.clone(),
                address: String::new(),
            },
            options,
            address: None,
            registry,
            counters,
            net: None,
            shutdown: Arc::new(Notify::new()),
        })
    }

    fn from_inner(inner: Inner) -> Exchange {
        Exchange {
            inner: Arc::new(inner),
        }
    }

    /// The data server's bound address (`None` for [`Exchange::local`]).
    pub fn address(&self) -> Option<SocketAddr> {
        self.inner.address
    }

    /// Where this TaskManager's tasks are, as consumers and producers see
    /// it: our id and the advertised data address.
    pub fn location(&self) -> DataLocation {
        self.inner.location.clone()
    }

    /// This TaskManager's id.
    pub fn task_manager(&self) -> &str {
        &self.inner.location.task_manager
    }

    /// Registers partition `id` with one subpartition per consumer (in
    /// `consumers` order), so consumers can attach; consumers that asked
    /// already are attached now. Called on the producer's task thread;
    /// never blocks. `interrupt` wakes the writer's blocked sends.
    pub fn create_partition(
        &self,
        id: PartitionId,
        consumers: &[DataLocation],
        interrupt: &Interrupt,
    ) -> Result<PartitionWriter, ExchangeError> {
        let remote: Vec<bool> = consumers.iter().map(|c| self.is_remote(c)).collect();
        if self.inner.net.is_none()
            && let Some(consumer) = consumers.iter().find(|c| self.is_remote(c))
        {
            return Err(ExchangeError::RemoteUnsupported {
                peer: describe(consumer),
            });
        }
        let subpartitions =
            u32::try_from(consumers.len()).map_err(|_| ExchangeError::InvalidOptions {
                key: "consumers",
                reason: "more than 2^32 - 1 consumers".into(),
            })?;
        let entry = self
            .inner
            .registry
            .create(id, subpartitions)
            .ok_or(ExchangeError::DuplicatePartition { partition: id })?;
        for pipe in entry.pipes() {
            interrupt.register(Arc::downgrade(pipe) as Weak<dyn InterruptWake>);
        }
        Ok(PartitionWriter::new(
            id,
            entry,
            consumers.to_vec(),
            remote,
            interrupt.clone(),
            Arc::clone(&self.inner.counters),
            self.inner.options.max_frame_bytes - BATCH_OVERHEAD,
        ))
    }

    /// Opens an input gate of one channel per spec (channel `i` is
    /// `channels[i]`). Called on the consumer's task thread; never blocks:
    /// local channels whose producer is not registered yet attach when it
    /// is (or fail after `request_timeout`), remote ones connect in the
    /// background. `interrupt` wakes the gate's blocked `next`.
    pub fn open_gate(
        &self,
        channels: Vec<ChannelSpec>,
        interrupt: &Interrupt,
    ) -> Result<InputGate, ExchangeError> {
        let signal = Arc::new(GateSignal::new(channels.len()));
        interrupt.register(Arc::downgrade(&signal) as Weak<dyn InterruptWake>);
        let counters = Arc::clone(&self.inner.counters);
        let mut gate = InputGate::new(Arc::clone(&signal), interrupt.clone(), counters);
        for (index, spec) in channels.into_iter().enumerate() {
            let channel = ChannelRef::of_spec(&spec);
            let waker = Waker::Gate {
                signal: Arc::clone(&signal),
                channel: index,
            };
            if !self.is_remote(&spec.location) {
                let pipe = self
                    .inner
                    .registry
                    .request(spec.partition, spec.subpartition)
                    .map_err(|fault| fault.into_error(channel.clone()))?;
                let attached = pipe.is_attached();
                pipe.set_consumer(waker);
                let mut state = GateChannel::new(channel, pipe);
                if !attached {
                    let timeout = self.inner.options.request_timeout;
                    state.expires = Some((Instant::now() + timeout, timeout));
                }
                gate.push_channel(state);
                continue;
            }
            let Some(net) = &self.inner.net else {
                return Err(ExchangeError::RemoteUnsupported { peer: channel.peer });
            };
            let pipe = Pipe::new(
                self.inner.options.buffers_per_channel,
                true,
                Arc::clone(&self.inner.counters),
            );
            pipe.claim();
            let notify = Arc::new(Notify::new());
            pipe.set_producer(Arc::clone(&notify));
            pipe.set_consumer(waker);
            let task = net.handle.spawn(client::run_channel(
                Arc::clone(net),
                spec,
                Arc::clone(&pipe),
                notify,
            ));
            let mut state = GateChannel::new(channel, pipe);
            state.task = Some(task.abort_handle());
            gate.push_channel(state);
        }
        Ok(gate)
    }

    /// Drops everything left of `job`: its partitions and the requests
    /// waiting for its partitions fail with [`ExchangeError::Released`]
    /// (blocked writers wake).
    pub fn release_job(&self, job: JobId) {
        self.inner.registry.release_job(job);
    }

    /// How many partitions are registered now (a partition leaves when
    /// each consumer has taken its `End`, learned of the producer's
    /// failure, or gone away; or on `release_job`).
    pub fn registered_partitions(&self) -> usize {
        self.inner.registry.sizes().0
    }

    /// The counters and gauges, for a metrics exporter.
    pub fn metrics(&self) -> ExchangeMetrics {
        self.inner.counters.snapshot()
    }

    fn is_remote(&self, location: &DataLocation) -> bool {
        location.task_manager != self.inner.location.task_manager
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Stops the accept loop, which aborts its connections.
        self.shutdown.notify_one();
    }
}

impl fmt::Debug for Exchange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Exchange")
            .field("task_manager", &self.inner.location.task_manager)
            .field("address", &self.inner.address)
            .finish()
    }
}
