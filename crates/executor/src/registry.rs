//! The task registry: task name → factory that makes a [`TaskCode`] from
//! the task's JSON arguments. A TaskManager creates the code it deploys
//! with it; a JobManager validates a submitted job with the same registry,
//! so bad arguments are refused before anything runs.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::args::ArgsError;
use crate::builtin;
use crate::code::TaskCode;
use crate::info::TaskInfo;

/// Makes a task's code from its arguments, or says which argument is wrong.
///
/// Factories must be cheap and free of side effects: [`TaskRegistry::validate`]
/// calls them and drops the result.
pub type TaskFactory =
    Arc<dyn Fn(&Value, &TaskInfo) -> Result<Box<dyn TaskCode>, ArgsError> + Send + Sync>;

/// Why a task could not be registered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RegisterError {
    /// A task of this name is already registered.
    #[error("a task named {0:?} is already registered")]
    Duplicate(String),
    /// The name is empty.
    #[error("a task name must not be empty")]
    EmptyName,
}

/// Task name → factory. Cloning is cheap (factories are shared).
#[derive(Clone, Default)]
pub struct TaskRegistry {
    factories: BTreeMap<String, TaskFactory>,
}

impl fmt::Debug for TaskRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskRegistry")
            .field("names", &self.names())
            .finish()
    }
}

impl TaskRegistry {
    /// A registry without any task.
    pub fn empty() -> TaskRegistry {
        TaskRegistry::default()
    }

    /// A registry with the built-in tasks: `count`, `burn`, `block`, `fail`
    /// (see [`builtin`](crate::builtin)).
    pub fn builtin() -> TaskRegistry {
        let mut registry = TaskRegistry::empty();
        for (name, factory) in builtin::factories() {
            registry
                .register(name, factory)
                .expect("built-in task names are distinct and non-empty");
        }
        registry
    }

    /// Registers `factory` under `name`.
    pub fn register<F>(&mut self, name: impl Into<String>, factory: F) -> Result<(), RegisterError>
    where
        F: Fn(&Value, &TaskInfo) -> Result<Box<dyn TaskCode>, ArgsError> + Send + Sync + 'static,
    {
        let name = name.into();
        if name.is_empty() {
            return Err(RegisterError::EmptyName);
        }
        if self.factories.contains_key(&name) {
            return Err(RegisterError::Duplicate(name));
        }
        self.factories.insert(name, Arc::new(factory));
        Ok(())
    }

    /// The registered names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.factories.keys().map(String::as_str).collect()
    }

    /// Makes the code of task `name` from `args`.
    pub fn create(
        &self,
        name: &str,
        args: &Value,
        info: &TaskInfo,
    ) -> Result<Box<dyn TaskCode>, ArgsError> {
        let factory = self
            .factories
            .get(name)
            .ok_or_else(|| ArgsError::UnknownTask {
                task: name.to_owned(),
                known: self.names().into_iter().map(str::to_owned).collect(),
            })?;
        factory(args, info)
    }

    /// Checks that task `name` exists and accepts `args`, without running
    /// it: what a JobManager calls for each vertex of a submitted job.
    pub fn validate(&self, name: &str, args: &Value, info: &TaskInfo) -> Result<(), ArgsError> {
        self.create(name, args, info).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TaskFailure;
    use crate::context::TaskContext;
    use serde_json::json;

    struct Nop;
    impl TaskCode for Nop {
        fn run(&mut self, _: &TaskContext) -> Result<(), TaskFailure> {
            Ok(())
        }
    }

    #[test]
    fn builtin_names_and_user_tasks() {
        let mut registry = TaskRegistry::builtin();
        assert_eq!(registry.names(), ["block", "burn", "count", "fail"]);
        registry
            .register("nop", |_: &Value, _: &TaskInfo| {
                Ok(Box::new(Nop) as Box<dyn TaskCode>)
            })
            .unwrap();
        assert!(registry.names().contains(&"nop"));
        assert_eq!(
            registry.register("count", |_: &Value, _: &TaskInfo| Ok(Box::new(Nop) as _)),
            Err(RegisterError::Duplicate("count".into()))
        );
        assert_eq!(
            registry.register("", |_: &Value, _: &TaskInfo| Ok(Box::new(Nop) as _)),
            Err(RegisterError::EmptyName)
        );
    }

    #[test]
    fn validate_names_the_unknown_task_and_the_known_ones() {
        let registry = TaskRegistry::builtin();
        let info = TaskInfo::new("v", 1);
        let err = registry.validate("cuont", &json!({}), &info).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown task \"cuont\"; known tasks: block, burn, count, fail"
        );
        assert!(registry.validate("count", &Value::Null, &info).is_ok());
    }
}
