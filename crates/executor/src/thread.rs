//! One attempt's OS thread: its name, its lowered priority, and the body
//! that runs the code, catches a panic and reports the outcome.
//!
//! Why a lower priority: a TaskManager's RPC, heartbeat and ZooKeeper
//! threads must answer within their timeouts whatever the tasks do. Task
//! code may keep every core busy; at a higher nice value the kernel still
//! gives task threads all idle CPU, but wakes a service thread ahead of them
//! and gives it the larger share, so heartbeats are not missed (and the
//! ZooKeeper session not lost) because a job is CPU-bound.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use holdfast_runtime::failure::{Failure, FailureKind};
use holdfast_runtime::ids::ExecutionAttemptId;
use thread_priority::ThreadPriority;

use crate::code::TaskCode;
use crate::context::TaskContext;
use crate::executor::Shared;
use crate::options::TaskPriority;
use crate::status::Exit;

/// Linux keeps 15 bytes of a thread's name.
const MAX_NAME: usize = 15;

/// `task-<vertex>.<subtask>#<attempt>`, shortened to 15 bytes: first to
/// `t<id>`, then to `~` and the id's tail (subtask and attempt tell sibling
/// threads apart; the vertex is the same for many).
pub(crate) fn thread_name(attempt: ExecutionAttemptId) -> String {
    let id = attempt.to_string();
    let long = format!("task-{id}");
    if long.len() <= MAX_NAME {
        return long;
    }
    let short = format!("t{id}");
    if short.len() <= MAX_NAME {
        return short;
    }
    // The id is ASCII, so any byte offset is a character boundary.
    format!("~{}", &id[id.len() - (MAX_NAME - 1)..])
}

/// Starts the attempt's thread.
pub(crate) fn spawn(
    shared: Arc<Shared>,
    slot: u32,
    code: Box<dyn TaskCode>,
    ctx: TaskContext,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name(thread_name(ctx.attempt()))
        .spawn(move || body(&shared, slot, code, &ctx))
        .map(drop)
}

fn body(shared: &Shared, slot: u32, code: Box<dyn TaskCode>, ctx: &TaskContext) {
    if let Err(error) = lower_priority(shared.priority)
        && !shared.priority_warned.swap(true, Ordering::Relaxed)
    {
        tracing::warn!(
            %error,
            priority = ?shared.priority,
            "cannot lower the priority of task threads; they run at the service threads' \
             priority (reported once)"
        );
    }
    shared.report_running(ctx.key(), slot, ctx.processed());
    let exit = run_code(code, ctx);
    shared.report_returned(ctx.key(), exit, ctx.processed());
}

/// Runs the code and drops it, never letting a panic unwind further, then
/// drops the cancel callbacks it left (nothing is left for them to
/// unblock). The code runs even if a cancel came before its thread started:
/// `Running` was already reported, so the code is the one to see the
/// cancel (every built-in but `block` returns at once).
pub(crate) fn run_code(code: Box<dyn TaskCode>, ctx: &TaskContext) -> Exit {
    let outcome = catch_unwind(AssertUnwindSafe(move || {
        let mut code = code;
        let result = code.run(ctx);
        drop(code);
        result
    }));
    ctx.forget_cancel_callbacks();
    match outcome {
        Ok(Ok(())) => Exit::Completed,
        Ok(Err(failure)) => Exit::Failed(failure.to_failure()),
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("a panic payload that is not a string");
            Exit::Failed(Failure::new(
                FailureKind::UserCode,
                format!("task panicked: {message}"),
            ))
        }
    }
}

/// Applies `priority` to the calling thread.
fn lower_priority(priority: TaskPriority) -> Result<(), thread_priority::Error> {
    match priority {
        TaskPriority::Inherit => Ok(()),
        TaskPriority::Nice(nice) => set_nice(nice),
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn set_nice(nice: u8) -> Result<(), thread_priority::Error> {
    use thread_priority::{
        NormalThreadSchedulePolicy, ThreadSchedulePolicy, set_thread_priority_and_policy,
        thread_native_id,
    };
    // SCHED_OTHER, where the crate expresses a priority as a nice value.
    let policy = ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Other);
    let priority = crossplatform_for_nice(nice, policy).ok_or(thread_priority::Error::Priority(
        "no cross-platform priority maps to this nice value",
    ))?;
    set_thread_priority_and_policy(thread_native_id(), priority, policy)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn set_nice(_nice: u8) -> Result<(), thread_priority::Error> {
    thread_priority::set_current_thread_priority(ThreadPriority::Min)
}

/// The cross-platform priority the `thread-priority` crate turns into
/// `nice` under `policy` (asking the crate rather than copying its formula).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn crossplatform_for_nice(
    nice: u8,
    policy: thread_priority::ThreadSchedulePolicy,
) -> Option<ThreadPriority> {
    (0..=99u8)
        .filter_map(|value| value.try_into().ok().map(ThreadPriority::Crossplatform))
        .find(|priority| priority.to_posix(policy).ok() == Some(i32::from(nice)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::TaskFailure;
    use crate::info::TaskInfo;
    use holdfast_runtime::ids::{AttemptRef, JobId};

    #[test]
    fn names_fit_in_15_bytes_and_keep_subtask_and_attempt() {
        let name = |s: &str| thread_name(s.parse().unwrap());
        assert_eq!(name("3.7#2"), "task-3.7#2");
        assert_eq!(name("12.345#6789"), "t12.345#6789");
        assert_eq!(name("4294967295.4294967295#4294967295"), "~295#4294967295");
        for id in ["0.0#0", "123.1023#45", "99999.99999#99999"] {
            assert!(name(id).len() <= MAX_NAME, "{id}");
        }
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn every_nice_value_has_a_crossplatform_priority() {
        use thread_priority::{NormalThreadSchedulePolicy, ThreadSchedulePolicy};
        let policy = ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Other);
        for nice in 1..=19 {
            assert!(
                crossplatform_for_nice(nice, policy).is_some(),
                "nice {nice}"
            );
        }
    }

    struct Panics(Box<dyn Fn() + Send>);
    impl TaskCode for Panics {
        fn run(&mut self, _: &TaskContext) -> Result<(), TaskFailure> {
            (self.0)();
            Ok(())
        }
    }

    /// Registers a cancel callback holding `held`, then returns.
    struct LeavesACallback(std::sync::Arc<()>);
    impl TaskCode for LeavesACallback {
        fn run(&mut self, ctx: &TaskContext) -> Result<(), TaskFailure> {
            let held = std::sync::Arc::clone(&self.0);
            ctx.on_cancel(move || drop(held));
            Ok(())
        }
    }

    #[test]
    fn callbacks_left_when_the_code_returns_are_dropped() {
        let key = AttemptRef::new(JobId::from_u128(1), "0.0#0".parse().unwrap());
        let (ctx, _handle) = TaskContext::standalone(key, TaskInfo::new("v", 1));
        let held = std::sync::Arc::new(());
        let code = LeavesACallback(std::sync::Arc::clone(&held));
        assert_eq!(run_code(Box::new(code), &ctx), Exit::Completed);
        assert_eq!(
            std::sync::Arc::strong_count(&held),
            1,
            "nothing holds it now"
        );
    }

    #[test]
    fn panics_become_failures_with_their_message() {
        let key = AttemptRef::new(JobId::from_u128(1), "0.0#0".parse().unwrap());
        let (ctx, _) = TaskContext::standalone(key, TaskInfo::new("v", 1));
        let exit = run_code(Box::new(Panics(Box::new(|| panic!("static")))), &ctx);
        assert_eq!(exit, Exit::Failed("task panicked: static".into()));
        let exit = run_code(
            Box::new(Panics(Box::new(|| panic!("formatted {}", 7)))),
            &ctx,
        );
        assert_eq!(exit, Exit::Failed("task panicked: formatted 7".into()));
        let exit = run_code(
            Box::new(Panics(Box::new(|| std::panic::panic_any(42)))),
            &ctx,
        );
        assert_eq!(
            exit,
            Exit::Failed("task panicked: a panic payload that is not a string".into())
        );
    }
}
