//! `wordcount`: counts the words of text files or of a topic.
//!
//! Parameters: `input` (a file or directory, or a list of them, or a
//! connector's URL such as `kafka://HOST:PORT/TOPIC`; required), `output`
//! (a directory for `part-<n>` files of `word count` lines, or a
//! connector's URL; omitted: printed), `counts` (`"final"`, the default:
//! each word's count once, at the end of the input — a topic is then read
//! `bounded` unless its URL says otherwise; `"running"`: `word n` at every
//! occurrence, the `n`-th, so that an output can be checked line by line).
//! Words are runs of letters and digits, lower-cased.

use serde_json::Value;

use crate::api::Dataflow;
use crate::connector::{InputUse, Target};
use crate::registry::{JobError, JobParams};
use crate::sink::FileSink;
use crate::source::FileLines;
use crate::window::Count;

/// The job's name.
pub const NAME: &str = "wordcount";

/// The words of a line: runs of alphanumeric characters, lower-cased.
pub fn words(line: &str) -> impl Iterator<Item = String> + '_ {
    line.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// The paths of parameter `name`: a string or a list of strings.
pub(crate) fn paths(
    params: &JobParams<'_>,
    args: &holdfast_executor::Args<'_>,
    name: &str,
) -> Result<Vec<String>, JobError> {
    let value = params.value().get(name).cloned().unwrap_or(Value::Null);
    let paths: Option<Vec<String>> = match &value {
        Value::String(s) if !s.is_empty() => Some(vec![s.clone()]),
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|v| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned))
            .collect(),
        _ => None,
    };
    paths.ok_or_else(|| {
        args.bad_value(name, &value, "a path or a non-empty list of paths")
            .into()
    })
}

/// Builds the job.
pub fn build(params: JobParams<'_>) -> Result<Dataflow, JobError> {
    let args = params.args(&["input", "output", "counts"])?;
    let running = match args.string("counts", "final")?.as_str() {
        "final" => false,
        "running" => true,
        other => {
            return Err(args
                .bad_value("counts", &Value::from(other), "\"final\" or \"running\"")
                .into());
        }
    };
    let output = args.string("output", "")?;
    let flow = Dataflow::new(NAME);
    let input = InputUse {
        bounded_by_default: !running,
    };
    let lines = match params.value().get("input") {
        Some(Value::String(text)) if !text.is_empty() => {
            match params.lines_source("input", text, input)? {
                Target::Path(path) => flow.source("read", FileLines::new([path])),
                Target::Connected(source) => flow.source("read", source),
            }
        }
        _ => flow.source("read", FileLines::new(paths(&params, &args, "input")?)),
    }
    .uid("wordcount-read");
    let words = lines
        .flat_map("split", |line: String| words(&line).collect::<Vec<_>>())
        .key_by(|word: &String| word.clone());
    let counts = if running {
        words.aggregate("count", Count)
    } else {
        words.aggregate_at_end("count", Count)
    }
    .uid("wordcount-count");
    if output.is_empty() {
        counts
            .map("format", |(w, n): (String, u64)| format!("{w} {n}"))
            .print("print")
            .uid("wordcount-print");
        return Ok(flow);
    }
    match params.lines_sink("output", &output)? {
        Target::Path(path) => counts.sink(
            "write",
            FileSink::with_format(path, |(w, n): &(String, u64), line: &mut String| {
                use std::fmt::Write as _;
                let _ = write!(line, "{w} {n}");
            }),
        ),
        Target::Connected(sink) => counts
            .map("format", |(w, n): (String, u64)| format!("{w} {n}"))
            .sink("write", sink),
    }
    .uid("wordcount-write");
    Ok(flow)
}
