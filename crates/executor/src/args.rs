//! Task arguments: a JSON object (or `null`, meaning no arguments) read with
//! [`Args`], which refuses unknown names and says exactly what is wrong in
//! an [`ArgsError`]. Built-in and user tasks parse their arguments with it.

use std::time::Duration;

use serde_json::{Map, Value};

/// Why a task cannot be made from its name and arguments. Every variant
/// names the task; argument errors also name the argument.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    /// No task of that name is registered.
    #[error("unknown task {task:?}; known tasks: {}", known.join(", "))]
    UnknownTask {
        /// The name asked for.
        task: String,
        /// The registered names.
        known: Vec<String>,
    },
    /// The arguments are neither a JSON object nor `null`.
    #[error("task {task:?}: arguments must be a JSON object or null, got {got}")]
    NotAnObject {
        /// The task.
        task: String,
        /// The arguments as given (JSON, shortened).
        got: String,
    },
    /// An argument the task does not take.
    #[error("task {task:?}: unknown argument {argument:?}; known arguments: {}", known.join(", "))]
    UnknownArgument {
        /// The task.
        task: String,
        /// The unknown argument's name.
        argument: String,
        /// The arguments the task takes.
        known: Vec<String>,
    },
    /// The task cannot run as the cluster is configured (an exactly-once
    /// sink in a job that does not checkpoint, a transaction timeout its
    /// checkpoints could outlast).
    #[error("task {task:?} cannot run as configured: {reason}")]
    Refused {
        /// The task.
        task: String,
        /// What is wrong and how to mend it.
        reason: String,
    },
    /// An argument with a value of the wrong type or out of range.
    #[error("task {task:?}: argument {argument:?} is {got}; expected {expected}")]
    BadValue {
        /// The task.
        task: String,
        /// The argument.
        argument: String,
        /// The value as given (JSON, shortened).
        got: String,
        /// What the value must be.
        expected: String,
    },
}

/// A task's arguments, checked against the names it takes. Getters return
/// the default when the argument is absent.
#[derive(Debug)]
pub struct Args<'a> {
    task: &'a str,
    map: Option<&'a Map<String, Value>>,
}

impl<'a> Args<'a> {
    /// Reads `value` as the arguments of `task`, which takes the arguments
    /// named in `known`.
    pub fn parse(task: &'a str, value: &'a Value, known: &[&str]) -> Result<Args<'a>, ArgsError> {
        let map = match value {
            Value::Null => None,
            Value::Object(map) => Some(map),
            other => {
                return Err(ArgsError::NotAnObject {
                    task: task.to_owned(),
                    got: shorten(other),
                });
            }
        };
        if let Some(unknown) = map
            .into_iter()
            .flat_map(Map::keys)
            .find(|name| !known.contains(&name.as_str()))
        {
            return Err(ArgsError::UnknownArgument {
                task: task.to_owned(),
                argument: unknown.clone(),
                known: known.iter().map(|name| (*name).to_owned()).collect(),
            });
        }
        Ok(Args { task, map })
    }

    fn get(&self, name: &str) -> Option<&'a Value> {
        self.map.and_then(|map| map.get(name))
    }

    /// An error saying argument `name`, given as `got`, must be `expected`:
    /// for range checks a task does itself.
    pub fn bad_value(&self, name: &str, got: &Value, expected: &str) -> ArgsError {
        ArgsError::BadValue {
            task: self.task.to_owned(),
            argument: name.to_owned(),
            got: shorten(got),
            expected: expected.to_owned(),
        }
    }

    /// A whole number of at least `min`; `default` when absent.
    pub fn u64_at_least(&self, name: &str, min: u64, default: u64) -> Result<u64, ArgsError> {
        match self.get(name) {
            None => Ok(default),
            Some(value) => value
                .as_u64()
                .filter(|n| *n >= min)
                .ok_or_else(|| self.bad_value(name, value, &format!("a whole number >= {min}"))),
        }
    }

    /// A whole number, or `null` for `None`; `default` when absent.
    pub fn opt_u64(&self, name: &str, default: Option<u64>) -> Result<Option<u64>, ArgsError> {
        match self.get(name) {
            None => Ok(default),
            Some(Value::Null) => Ok(None),
            Some(value) => value
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.bad_value(name, value, "a whole number >= 0 or null")),
        }
    }

    /// A number greater than zero, or `null` for `None`; `default` when
    /// absent.
    pub fn opt_positive_f64(
        &self,
        name: &str,
        default: Option<f64>,
    ) -> Result<Option<f64>, ArgsError> {
        match self.get(name) {
            None => Ok(default),
            Some(Value::Null) => Ok(None),
            Some(value) => value
                .as_f64()
                .filter(|x| x.is_finite() && *x > 0.0)
                .map(Some)
                .ok_or_else(|| self.bad_value(name, value, "a number > 0 or null")),
        }
    }

    /// A duration in (fractional) seconds, at least 0; `default` when
    /// absent.
    pub fn seconds(&self, name: &str, default: Duration) -> Result<Duration, ArgsError> {
        match self.get(name) {
            None => Ok(default),
            Some(value) => self.duration(name, value, "a number of seconds >= 0"),
        }
    }

    /// A duration in (fractional) seconds, or `null` for `None`; `default`
    /// when absent.
    pub fn opt_seconds(
        &self,
        name: &str,
        default: Option<Duration>,
    ) -> Result<Option<Duration>, ArgsError> {
        match self.get(name) {
            None => Ok(default),
            Some(Value::Null) => Ok(None),
            Some(value) => self
                .duration(name, value, "a number of seconds >= 0 or null")
                .map(Some),
        }
    }

    fn duration(&self, name: &str, value: &Value, expected: &str) -> Result<Duration, ArgsError> {
        value
            .as_f64()
            .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
            .ok_or_else(|| self.bad_value(name, value, expected))
    }

    /// A string; `default` when absent.
    pub fn string(&self, name: &str, default: &str) -> Result<String, ArgsError> {
        match self.get(name) {
            None => Ok(default.to_owned()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(value) => Err(self.bad_value(name, value, "a string")),
        }
    }
}

/// A JSON value as text, cut to 80 characters.
fn shorten(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(80) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const KNOWN: &[&str] = &["n", "rate", "secs", "msg"];

    #[test]
    fn absent_arguments_take_their_defaults_and_null_means_none() {
        let empty = json!({});
        for value in [&Value::Null, &empty] {
            let args = Args::parse("t", value, KNOWN).unwrap();
            assert_eq!(args.u64_at_least("n", 1, 7), Ok(7));
            assert_eq!(args.opt_positive_f64("rate", Some(2.5)), Ok(Some(2.5)));
            assert_eq!(args.string("msg", "hi"), Ok("hi".to_owned()));
        }
        let nulls = json!({"n": null, "rate": null, "secs": null});
        let args = Args::parse("t", &nulls, KNOWN).unwrap();
        assert_eq!(args.opt_u64("n", Some(3)), Ok(None));
        assert_eq!(args.opt_positive_f64("rate", Some(1.0)), Ok(None));
        assert_eq!(args.opt_seconds("secs", Some(Duration::ZERO)), Ok(None));
        let given = json!({"n": 5, "secs": 0.25});
        let args = Args::parse("t", &given, KNOWN).unwrap();
        assert_eq!(args.opt_u64("n", None), Ok(Some(5)));
        assert_eq!(
            args.seconds("secs", Duration::ZERO),
            Ok(Duration::from_millis(250))
        );
    }

    #[test]
    fn errors_name_the_task_the_argument_and_what_is_wrong() {
        let err = Args::parse("count", &json!({"recrods": 1}), &["records", "rate"]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "task \"count\": unknown argument \"recrods\"; known arguments: records, rate"
        );
        let err = Args::parse("count", &json!([1]), KNOWN).unwrap_err();
        assert_eq!(
            err.to_string(),
            "task \"count\": arguments must be a JSON object or null, got [1]"
        );
        let bad = json!({"n": -1, "rate": 0, "secs": -2.0, "msg": 3});
        let args = Args::parse("count", &bad, KNOWN).unwrap();
        assert_eq!(
            args.u64_at_least("n", 1, 1).unwrap_err().to_string(),
            "task \"count\": argument \"n\" is -1; expected a whole number >= 1"
        );
        assert!(matches!(
            args.opt_positive_f64("rate", None),
            Err(ArgsError::BadValue { argument, got, .. }) if argument == "rate" && got == "0"
        ));
        assert!(matches!(
            args.seconds("secs", Duration::ZERO),
            Err(ArgsError::BadValue { argument, .. }) if argument == "secs"
        ));
        assert!(matches!(
            args.string("msg", ""),
            Err(ArgsError::BadValue { expected, .. }) if expected == "a string"
        ));
    }

    #[test]
    fn long_values_are_shortened() {
        let long = Value::String("x".repeat(200));
        assert_eq!(shorten(&long).chars().count(), 81);
    }
}
