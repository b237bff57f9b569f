//! Jobs by name ([`JobRegistry`]): a binary registers the dataflows it can
//! run — holdfast's built-in ones, or a user's own — and the same registry
//! turns `(name, params)` into a job graph for the client and into task code
//! on every TaskManager (each rebuilds the job from its name and parameters
//! and runs its vertex of it; a fingerprint makes sure both built the same
//! plan).

use std::collections::BTreeMap;
use std::sync::Arc;

use holdfast_exchange::Exchange;
use holdfast_executor::{Args, ArgsError, RegisterError, TaskCode, TaskInfo, TaskRegistry};
use holdfast_runtime::graph::JobGraph;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::Dataflow;
use crate::connector::{Connector, Connectors, InputUse, Target};
use crate::metrics::DataflowMetrics;
use crate::plan::compile::DATAFLOW_TASK;
use crate::plan::{CompiledPlan, PlanError};
use crate::sink::{Checkpointing, Sink};
use crate::source::Source;
use crate::task::DataflowTask;
use crate::time::{Clock, SystemClock};

/// The parameters a job is run with (a JSON object, or `null`), and the
/// connectors its `input` and `output` may name.
#[derive(Clone, Copy, Debug)]
pub struct JobParams<'a> {
    job: &'a str,
    value: &'a Value,
    connectors: &'a Connectors,
}

/// No connectors.
static NO_CONNECTORS: Connectors = Connectors::none();

impl<'a> JobParams<'a> {
    /// The parameters `value` of job `job` (no connectors: paths only).
    pub fn new(job: &'a str, value: &'a Value) -> JobParams<'a> {
        JobParams {
            job,
            value,
            connectors: &NO_CONNECTORS,
        }
    }

    /// The same parameters, with `connectors`.
    pub fn with_connectors(self, connectors: &'a Connectors) -> JobParams<'a> {
        JobParams { connectors, ..self }
    }

    /// Where `text`, the value of input parameter `argument`, points: a
    /// path, or a connector's source of lines.
    pub fn lines_source(
        &self,
        argument: &str,
        text: &str,
        input: InputUse,
    ) -> Result<Target<Box<dyn Source<String>>>, JobError> {
        self.connectors
            .lines_source(text, self.job, input)
            .map_err(|reason| self.connector_error(argument, text, reason))
    }

    /// Where `text`, the value of output parameter `argument`, points: a
    /// path, or a connector's sink of lines.
    pub fn lines_sink(
        &self,
        argument: &str,
        text: &str,
    ) -> Result<Target<Box<dyn Sink<String>>>, JobError> {
        self.connectors
            .lines_sink(text, self.job)
            .map_err(|reason| self.connector_error(argument, text, reason))
    }

    fn connector_error(&self, argument: &str, text: &str, reason: String) -> JobError {
        JobError::Connector {
            job: self.job.to_owned(),
            argument: argument.to_owned(),
            target: crate::connector::redacted(text),
            reason,
        }
    }

    /// The job's name.
    pub fn job(&self) -> &str {
        self.job
    }

    /// The parameters, checked against the names the job takes.
    pub fn args(&self, known: &[&str]) -> Result<Args<'a>, ArgsError> {
        Args::parse(self.job, self.value, known)
    }

    /// The raw JSON.
    pub fn value(&self) -> &Value {
        self.value
    }
}

/// Why a job cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobError {
    /// No job of that name is registered.
    #[error("unknown job {name:?}; known jobs: {}", known.join(", "))]
    UnknownJob {
        /// The name asked for.
        name: String,
        /// The registered names.
        known: Vec<String>,
    },
    /// A parameter is wrong.
    #[error(transparent)]
    Params(#[from] ArgsError),
    /// The plan is wrong.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// An `input` or `output` names a connector that refuses it.
    #[error("job {job:?}: argument {argument:?} ({target}): {reason}")]
    Connector {
        /// The job.
        job: String,
        /// The argument.
        argument: String,
        /// Its value.
        target: String,
        /// What is wrong.
        reason: String,
    },
    /// The job's build function panicked.
    #[error("building job {job:?} panicked: {message}")]
    BuildPanicked {
        /// The job.
        job: String,
        /// The panic's message.
        message: String,
    },
}

/// Builds a job's dataflow from its parameters.
pub type BuildFn = dyn Fn(JobParams<'_>) -> Result<Dataflow, JobError> + Send + Sync;

#[derive(Clone)]
struct Entry {
    description: String,
    build: Arc<BuildFn>,
}

/// Job name → how to build it, and the connectors jobs may read and write
/// through. Cloning is cheap.
#[derive(Clone, Default)]
pub struct JobRegistry {
    jobs: BTreeMap<String, Entry>,
    connectors: Connectors,
}

impl std::fmt::Debug for JobRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobRegistry")
            .field("jobs", &self.jobs.keys().collect::<Vec<_>>())
            .field("connectors", &self.connectors)
            .finish()
    }
}

/// What a dataflow vertex's task arguments say (the job graph carries them;
/// every TaskManager rebuilds the job from them).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VertexArgs {
    /// The registered job.
    pub job: String,
    /// Its parameters.
    #[serde(default)]
    pub params: Value,
    /// The default parallelism it was compiled with.
    pub parallelism: u32,
    /// The `pipeline.max-parallelism` it was compiled with (`None`: the
    /// default; the job's own setting wins over either).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_parallelism: Option<u32>,
    /// Which vertex this task runs.
    pub vertex: u32,
    /// The compiled plan's fingerprint.
    pub fingerprint: String,
}

impl JobRegistry {
    /// A registry without jobs.
    pub fn new() -> JobRegistry {
        JobRegistry::default()
    }

    /// A registry with holdfast's built-in jobs (`wordcount`, `enrich`,
    /// `datagen`).
    pub fn builtin() -> JobRegistry {
        let mut registry = JobRegistry::new();
        crate::jobs::register_all(&mut registry).expect("built-in job names are distinct");
        registry
    }

    /// The same registry, whose jobs may also read and write through
    /// `connector` (e.g. `holdfast_kafka::connector()`).
    pub fn with_connector(mut self, connector: impl Connector) -> JobRegistry {
        self.connectors.add(connector);
        self
    }

    /// The connectors jobs may use.
    pub fn connectors(&self) -> &Connectors {
        &self.connectors
    }

    /// Registers job `name`.
    pub fn register(
        &mut self,
        name: &str,
        description: &str,
        build: impl Fn(JobParams<'_>) -> Result<Dataflow, JobError> + Send + Sync + 'static,
    ) -> Result<(), RegisterError> {
        if name.is_empty() {
            return Err(RegisterError::EmptyName);
        }
        if self.jobs.contains_key(name) {
            return Err(RegisterError::Duplicate(name.to_owned()));
        }
        self.jobs.insert(
            name.to_owned(),
            Entry {
                description: description.to_owned(),
                build: Arc::new(build),
            },
        );
        Ok(())
    }

    /// Whether a job of this name is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.jobs.contains_key(name)
    }

    /// `(name, description)` of every job, sorted by name.
    pub fn jobs(&self) -> Vec<(&str, &str)> {
        self.jobs
            .iter()
            .map(|(n, e)| (n.as_str(), e.description.as_str()))
            .collect()
    }

    /// Builds and compiles job `name` with `params`; operators without a
    /// parallelism get `parallelism`; `pipeline.max-parallelism` is its
    /// default (128).
    pub fn compile(
        &self,
        name: &str,
        params: &Value,
        parallelism: u32,
    ) -> Result<CompiledPlan, JobError> {
        self.compile_with(name, params, parallelism, None)
    }

    /// [`compile`](Self::compile) with `pipeline.max-parallelism` (the
    /// job's own [`set_max_parallelism`](crate::Dataflow::set_max_parallelism)
    /// wins over it; `None`: the default, 128).
    pub fn compile_with(
        &self,
        name: &str,
        params: &Value,
        parallelism: u32,
        max_parallelism: Option<u32>,
    ) -> Result<CompiledPlan, JobError> {
        let entry = self.jobs.get(name).ok_or_else(|| JobError::UnknownJob {
            name: name.to_owned(),
            known: self.jobs.keys().cloned().collect(),
        })?;
        // A job's own code must not take down the process that builds it
        // (a JobManager validating, a TaskManager deploying).
        let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            (entry.build)(JobParams::new(name, params).with_connectors(&self.connectors))
        }));
        let flow = built.map_err(|panic| JobError::BuildPanicked {
            job: name.to_owned(),
            message: panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)")
                .to_owned(),
        })??;
        let mut plan = flow.build()?;
        if plan.max_parallelism.is_none() {
            plan.max_parallelism = max_parallelism;
        }
        Ok(CompiledPlan::compile(plan, parallelism)?)
    }

    /// The job graph to submit for job `name` with `params`.
    pub fn job_graph(
        &self,
        name: &str,
        params: &Value,
        parallelism: u32,
    ) -> Result<JobGraph, JobError> {
        self.job_graph_with(name, params, parallelism, None)
    }

    /// [`job_graph`](Self::job_graph) with `pipeline.max-parallelism`
    /// (see [`compile_with`](Self::compile_with)); the vertices carry it, so
    /// the job keeps its key groups through restarts and leader changes.
    pub fn job_graph_with(
        &self,
        name: &str,
        params: &Value,
        parallelism: u32,
        max_parallelism: Option<u32>,
    ) -> Result<JobGraph, JobError> {
        let compiled = self.compile_with(name, params, parallelism, max_parallelism)?;
        Ok(compiled.job_graph(|vertex| {
            serde_json::to_value(VertexArgs {
                job: name.to_owned(),
                params: params.clone(),
                parallelism,
                max_parallelism,
                vertex,
                fingerprint: compiled.fingerprint().to_owned(),
            })
            .unwrap_or(Value::Null)
        }))
    }

    /// Registers the `dataflow` task in `tasks`: it rebuilds the job a vertex
    /// names and runs that vertex, exchanging records through `exchange`
    /// (`None` on a JobManager, which only validates) and counting into
    /// `metrics`.
    pub fn install(
        &self,
        tasks: &mut TaskRegistry,
        exchange: Option<Exchange>,
        metrics: Arc<DataflowMetrics>,
    ) -> Result<(), RegisterError> {
        self.install_with(tasks, exchange, Arc::new(SystemClock), metrics)
    }

    /// [`install`](Self::install) with a given clock.
    pub fn install_with(
        &self,
        tasks: &mut TaskRegistry,
        exchange: Option<Exchange>,
        clock: Arc<dyn Clock>,
        metrics: Arc<DataflowMetrics>,
    ) -> Result<(), RegisterError> {
        let registry = self.clone();
        tasks.register(DATAFLOW_TASK, move |args: &Value, info: &TaskInfo| {
            let task = registry.task(
                args,
                exchange.clone(),
                Arc::clone(&clock),
                Arc::clone(&metrics),
            )?;
            let checkpointing = match &info.checkpointing {
                None => Checkpointing::Off,
                Some(task) => Checkpointing::On(task.timing.as_ref()),
            };
            task.compiled()
                .check_sinks(checkpointing)
                .map_err(|error| ArgsError::Refused {
                    task: DATAFLOW_TASK.to_owned(),
                    reason: error.to_string(),
                })?;
            task.check_parallelism(info.parallelism)
                .map_err(|expected| ArgsError::BadValue {
                    task: DATAFLOW_TASK.to_owned(),
                    argument: "parallelism".to_owned(),
                    got: info.parallelism.to_string(),
                    expected: format!(
                        "{expected}: a vertex's parallelism in the job graph must be the one its \
                         job compiles to (submit the graph `holdfast run` builds)"
                    ),
                })?;
            let code: Box<dyn TaskCode> = Box::new(task);
            Ok(code)
        })
    }

    /// The task code of the vertex `args` names.
    pub fn task(
        &self,
        args: &Value,
        exchange: Option<Exchange>,
        clock: Arc<dyn Clock>,
        metrics: Arc<DataflowMetrics>,
    ) -> Result<DataflowTask, ArgsError> {
        let bad = |argument: &str, expected: String| ArgsError::BadValue {
            task: DATAFLOW_TASK.to_owned(),
            argument: argument.to_owned(),
            got: shorten(args),
            expected,
        };
        let vertex_args: VertexArgs = serde_json::from_value(args.clone()).map_err(|e| {
            bad(
                "args",
                format!("{{job, params, parallelism, vertex, fingerprint}} ({e})"),
            )
        })?;
        let compiled = self
            .compile_with(
                &vertex_args.job,
                &vertex_args.params,
                vertex_args.parallelism,
                vertex_args.max_parallelism,
            )
            .map_err(|e| bad("params", format!("a job that builds: {e}")))?;
        if compiled.fingerprint() != vertex_args.fingerprint {
            return Err(bad(
                "fingerprint",
                format!(
                    "{} — the plan this binary builds for job {:?} differs from the submitted one: \
                     run the same build of the job on clients and TaskManagers",
                    compiled.fingerprint(),
                    vertex_args.job
                ),
            ));
        }
        if vertex_args.vertex as usize >= compiled.vertices().len() {
            return Err(bad(
                "vertex",
                format!("below {}", compiled.vertices().len()),
            ));
        }
        Ok(DataflowTask::new(
            Arc::new(compiled),
            vertex_args.vertex,
            exchange,
            clock,
            metrics,
        ))
    }
}

fn shorten(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 200 {
        text.chars().take(197).collect::<String>() + "..."
    } else {
        text
    }
}
