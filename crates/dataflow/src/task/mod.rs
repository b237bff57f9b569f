//! The task code of a dataflow vertex ([`DataflowTask`]): it builds the
//! vertex's operator chain, connects its inputs and outputs through the
//! exchange as its wiring says, and runs either a source loop (poll, push,
//! sleep when idle) or an input loop (take batches and watermarks from the
//! gate, flush outputs whenever the input is momentarily idle, fire
//! processing-time timers), until the input ends or the task is canceled.

pub(crate) mod build;
pub(crate) mod checkpoints;
pub(crate) mod input;
pub(crate) mod output;
pub(crate) mod source_loop;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use holdfast_exchange::{Event, Exchange, ExchangeError, InputGate, Interrupt};
use holdfast_executor::{TaskCode, TaskContext, TaskFailure};
use holdfast_runtime::failure::FailureKind;

use crate::data::Timestamp;
use crate::metrics::DataflowMetrics;
use crate::plan::CompiledPlan;
use crate::source::Poll;
use crate::task::build::Head;
use crate::task::checkpoints::{Ended, Flow, TaskCheckpoints};
use crate::task::input::{Chain, InputPort, Watermarks};
use crate::task::source_loop::SourceLoop;
use crate::time::Clock;

/// The longest an idle task waits before looking at its timers again.
const IDLE_WAIT: Duration = Duration::from_millis(500);

/// The longest an idle input task waits before looking at its checkpoint
/// requests again (a completed checkpoint's commit waits at most this).
const REQUEST_POLL: Duration = Duration::from_millis(50);

/// What one subtask of a dataflow vertex runs.
pub struct DataflowTask {
    compiled: Arc<CompiledPlan>,
    vertex: u32,
    exchange: Option<Exchange>,
    clock: Arc<dyn Clock>,
    metrics: Arc<DataflowMetrics>,
}

impl DataflowTask {
    /// The compiled job this task runs a vertex of.
    pub fn compiled(&self) -> &Arc<CompiledPlan> {
        &self.compiled
    }

    /// Vertex `vertex` of `compiled`, exchanging records through `exchange`
    /// (`None`: the task can be validated but not run).
    pub fn new(
        compiled: Arc<CompiledPlan>,
        vertex: u32,
        exchange: Option<Exchange>,
        clock: Arc<dyn Clock>,
        metrics: Arc<DataflowMetrics>,
    ) -> DataflowTask {
        DataflowTask {
            compiled,
            vertex,
            exchange,
            clock,
            metrics,
        }
    }

    /// `Err(expected)` unless `parallelism` is the vertex's parallelism in
    /// the compiled plan.
    pub fn check_parallelism(&self, parallelism: u32) -> Result<(), u32> {
        let expected = self.compiled.vertices[self.vertex as usize].parallelism;
        if parallelism == expected {
            Ok(())
        } else {
            Err(expected)
        }
    }

    fn run_inner(
        &mut self,
        ctx: &TaskContext,
        interrupt: &Interrupt,
        canceled: &Arc<AtomicBool>,
    ) -> Result<(), TaskFailure> {
        let exchange = self.exchange.as_ref().ok_or_else(|| {
            TaskFailure::new(
                "this process has no data exchange: dataflow tasks run on TaskManagers",
            )
        })?;
        let env = build::TaskEnv {
            exchange,
            interrupt,
            canceled,
            clock: &self.clock,
            metrics: &self.metrics,
        };
        let (head, header) = build::build(&self.compiled, self.vertex, ctx, &env)?;
        let batch_size = self.compiled.plan.batch_size;
        match head {
            Head::Source(source) => {
                let checkpoints = TaskCheckpoints::new(ctx, 0, header);
                run_source(source, ctx, batch_size, &*self.clock, checkpoints)
            }
            Head::Input { port, gate } => {
                let checkpoints = TaskCheckpoints::new(ctx, gate.channels(), header);
                run_input(port, gate, ctx, &*self.clock, checkpoints)
            }
        }
    }
}

impl TaskCode for DataflowTask {
    fn handles_checkpoints(&self) -> bool {
        true
    }

    fn run(&mut self, ctx: &TaskContext) -> Result<(), TaskFailure> {
        let interrupt = Interrupt::new();
        let canceled = Arc::new(AtomicBool::new(false));
        let (trigger, flag) = (interrupt.clone(), Arc::clone(&canceled));
        ctx.on_cancel(move || {
            flag.store(true, Ordering::Release);
            trigger.trigger();
        });
        match self.run_inner(ctx, &interrupt, &canceled) {
            // Canceled: whatever the code was doing stopped because of it.
            Err(_) if ctx.is_canceled() => Ok(()),
            // A neighbour stopped first: when the job is being canceled or
            // restarted, this task's own cancel is on its way. Waiting for
            // it a moment keeps a cancel from logging failures, and lets the
            // neighbour's own failure (the cause) reach the JobManager first.
            Err(failure) if is_secondary(&failure) => {
                if ctx.sleep_or_cancel(SECONDARY_GRACE) {
                    Err(failure)
                } else {
                    Ok(())
                }
            }
            other => other,
        }
    }
}

/// How long to wait for input before the next timer is due.
fn wait_for(chain: &dyn Chain, clock: &dyn Clock) -> Duration {
    match chain.next_timer() {
        Some(at) => {
            let ms = at
                .saturating_sub(clock.now())
                .clamp(0, IDLE_WAIT.as_millis() as i64);
            Duration::from_millis(ms as u64)
        }
        None => IDLE_WAIT,
    }
}

/// Fires processing-time timers that are due.
fn fire_timers(chain: &mut dyn Chain, clock: &dyn Clock) -> Result<(), TaskFailure> {
    if let Some(at) = chain.next_timer() {
        let now: Timestamp = clock.now();
        if now >= at {
            chain.on_time(now)?;
        }
    }
    Ok(())
}

/// How long a task whose neighbour stopped waits for its own cancel before
/// it reports the failure.
const SECONDARY_GRACE: Duration = Duration::from_secs(1);

/// Whether `failure` is a neighbour's failure seen through the exchange.
pub(crate) fn is_secondary(failure: &TaskFailure) -> bool {
    failure.kind().is_secondary()
}

/// How a task failing to read its input says so.
pub(crate) const UPSTREAM_FAILED: &str = "cannot read records from upstream";
/// How a task failing to write its output says so.
pub(crate) const DOWNSTREAM_FAILED: &str = "cannot send records downstream";

fn gate_failure(error: ExchangeError) -> TaskFailure {
    TaskFailure::with_source(UPSTREAM_FAILED, error).of_kind(FailureKind::Upstream)
}

fn run_source(
    mut source: Box<dyn SourceLoop>,
    ctx: &TaskContext,
    batch_size: usize,
    clock: &dyn Clock,
    mut checkpoints: TaskCheckpoints,
) -> Result<(), TaskFailure> {
    loop {
        if ctx.is_canceled() {
            return Ok(());
        }
        // Between polls: a barrier is never inside a batch.
        match checkpoints.source_requests(ctx, source.as_mut())? {
            Flow::Go => {}
            Flow::Halt => {
                // A stop-with-savepoint's barrier went out: nothing more
                // is read (nor timers fired) until it ends one way or the
                // other.
                source.chain().flush()?;
                if !ctx.sleep_or_request(IDLE_WAIT) {
                    return Ok(());
                }
                continue;
            }
            Flow::Stop => return stopped(ctx, source.chain()),
        }
        let (poll, n) = source.poll(batch_size)?;
        ctx.add_processed(n);
        fire_timers(source.chain(), clock)?;
        match poll {
            Poll::Ready => {}
            Poll::Idle(wait) => {
                source.chain().flush()?;
                let wait = wait.min(wait_for(source.chain(), clock));
                if !ctx.sleep_or_request(wait) {
                    return Ok(());
                }
            }
            Poll::End => break,
        }
    }
    ctx.meters().set_watermark(Timestamp::MAX);
    source.chain().finish()?;
    checkpoints.await_last_checkpoint(ctx, Ended::Source(source.as_mut()))
}

/// A stop-with-savepoint completed and the source committed it: its
/// chain ends, which ends every channel downstream, so each task ends
/// after its producers (no task writes to one that ended). What operators
/// emit on that end (windows firing) comes after the savepoint's barrier:
/// it is never committed, and the resumed job emits it once.
fn stopped(ctx: &TaskContext, chain: &mut dyn Chain) -> Result<(), TaskFailure> {
    tracing::info!(key = %ctx.key(),
        "stop-with-savepoint complete and committed: the source ends (the job resumes from the savepoint)");
    chain.finish()
}

fn run_input(
    mut port: Box<dyn InputPort>,
    mut gate: InputGate,
    ctx: &TaskContext,
    clock: &dyn Clock,
    mut checkpoints: TaskCheckpoints,
) -> Result<(), TaskFailure> {
    let mut watermarks = Watermarks::new(gate.channels());
    while !watermarks.all_ended() {
        checkpoints.input_requests(ctx, port.chain(), &mut gate)?;
        let next = match gate.try_next().map_err(gate_failure)? {
            Some(next) => Some(next),
            None => {
                // Idle for now: send what is buffered before waiting (not
                // longer than a checkpoint's "complete" may wait to reach
                // the sinks).
                port.chain().flush()?;
                let wait = wait_for(port.chain(), clock).min(REQUEST_POLL);
                gate.next(wait).map_err(gate_failure)?
            }
        };
        if let Some((channel, event)) = next {
            match event {
                Event::Batch(batch) => {
                    let n = port.batch(batch)?;
                    ctx.add_processed(n);
                }
                Event::Watermark(watermark) => {
                    if let Some(w) = watermarks.advance(channel, watermark) {
                        ctx.meters().set_watermark(w);
                        port.chain().watermark(w)?;
                    }
                }
                Event::Idle(idle) => {
                    let advanced = watermarks.set_idle(channel, idle);
                    if let Some(idle) = watermarks.idleness_change() {
                        port.chain().idle(idle)?;
                    }
                    if let Some(w) = advanced {
                        ctx.meters().set_watermark(w);
                        port.chain().watermark(w)?;
                    }
                }
                Event::End => {
                    if let Some(w) = watermarks.end(channel) {
                        ctx.meters().set_watermark(w);
                        port.chain().watermark(w)?;
                    }
                    if let Some(idle) = watermarks.idleness_change() {
                        port.chain().idle(idle)?;
                    }
                    checkpoints.on_end(ctx, port.chain(), &mut gate, channel)?;
                }
                Event::Barrier(id, kind) => {
                    checkpoints.on_barrier(ctx, port.chain(), &mut gate, channel, id, kind)?;
                }
                other => {
                    return Err(TaskFailure::new(format!(
                        "unexpected {} event from channel {channel}",
                        other.kind()
                    )));
                }
            }
        }
        fire_timers(port.chain(), clock)?;
    }
    // Every input ended: its watermark is the end of time.
    ctx.meters().set_watermark(Timestamp::MAX);
    port.chain().finish()?;
    checkpoints.await_last_checkpoint(ctx, Ended::Input(port.chain()))
}
