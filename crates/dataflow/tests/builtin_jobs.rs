//! The built-in jobs, built from their parameters and run in this process,
//! against plain computations; bad parameters are named.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use holdfast_dataflow::jobs::enrich::{self, EventShape, table};
use holdfast_dataflow::{JobRegistry, LocalRun};
use serde_json::json;
use support::committed;

fn run(name: &str, params: serde_json::Value, parallelism: u32, taskmanagers: u32) {
    let jobs = JobRegistry::builtin();
    let compiled = jobs
        .compile(name, &params, parallelism)
        .expect("the job builds");
    let run = LocalRun {
        parallelism,
        taskmanagers,
        ..LocalRun::default()
    };
    run.run_compiled(Arc::new(compiled)).expect("the job runs");
}

#[test]
fn wordcount_counts_every_word_of_every_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    std::fs::write(input.join("a.txt"), "The cat, the HAT.\nthe end\n").unwrap();
    std::fs::write(input.join("b.txt"), "cat-2 cat\n\n").unwrap();
    let output = dir.path().join("out");
    run("wordcount", json!({"input": input, "output": output}), 3, 2);
    let expected = ["2 1", "cat 3", "end 1", "hat 1", "the 3"];
    assert_eq!(committed(&output), expected);
}

#[test]
fn enrich_counts_events_per_attribute_and_window_like_a_loop() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("table.tsv");
    table::generate(&path, 500, 7, |_, _| {}).unwrap();
    let output = dir.path().join("out");
    let params = json!({
        "table": path, "events": 20_000, "users": 600, "events_per_second": 1_000,
        "window_secs": 5, "out_of_orderness_ms": 400, "output": output,
    });
    run("enrich", params, 2, 2);
    let shape = EventShape {
        users: 600,
        events_per_second: 1_000,
        out_of_orderness_ms: 400,
    };
    let mut expected: BTreeMap<(i64, String), u64> = BTreeMap::new();
    for i in 0..20_000 {
        let e = enrich::event(i, shape);
        let attribute = if e.user < 500 {
            table::generated_attribute(e.user, 7)
        } else {
            "unknown".to_owned()
        };
        let start = e.time - e.time.rem_euclid(5_000);
        *expected.entry((start, attribute)).or_insert(0) += 1;
    }
    let mut got = BTreeMap::new();
    for line in committed(&output) {
        let f: Vec<&str> = line.split(' ').collect();
        assert_eq!(f.len(), 4, "on-time results only: {line}");
        let start: i64 = f[0].parse().unwrap();
        assert_eq!(f[1].parse::<i64>().unwrap() - start, 5_000);
        got.insert((start, f[2].to_owned()), f[3].parse::<u64>().unwrap());
    }
    assert_eq!(got, expected);
}

#[test]
fn wordcount_with_running_counts_writes_each_words_nth_occurrence_once() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    std::fs::write(&input, "a b a\nb a\n").unwrap();
    let output = dir.path().join("out");
    run(
        "wordcount",
        json!({"input": format!("file://{}", input.display()), "output": output, "counts": "running"}),
        2,
        1,
    );
    let mut lines = committed(&output);
    lines.sort();
    assert_eq!(lines, ["a 1", "a 2", "a 3", "b 1", "b 2"]);
    let error = JobRegistry::builtin()
        .compile("wordcount", &json!({"input": "x", "counts": "some"}), 1)
        .unwrap_err();
    assert!(
        error.to_string().contains("\"final\" or \"running\""),
        "{error}"
    );
}

#[test]
fn enrich_reads_events_from_lines_and_skips_the_malformed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("table.tsv");
    table::generate(&path, 50, 7, |_, _| {}).unwrap();
    let shape = EventShape {
        users: 60,
        events_per_second: 100,
        out_of_orderness_ms: 0,
    };
    let mut events = String::new();
    let mut expected: BTreeMap<(i64, String), u64> = BTreeMap::new();
    for i in 0..2_000 {
        let e = enrich::event(i, shape);
        events.push_str(&format!("{}\t{}\t{}\n", e.time, e.user, e.amount));
        if i == 10 {
            events.push_str("not an event\n");
        }
        let attribute = if e.user < 50 {
            table::generated_attribute(e.user, 7)
        } else {
            "unknown".to_owned()
        };
        let start = e.time - e.time.rem_euclid(5_000);
        *expected.entry((start, attribute)).or_insert(0) += 1;
    }
    let input = dir.path().join("events.tsv");
    std::fs::write(&input, events).unwrap();
    let output = dir.path().join("out");
    let params = json!({
        "table": path, "input": input, "window_secs": 5, "out_of_orderness_ms": 0, "output": output,
    });
    run("enrich", params, 1, 1);
    let mut got = BTreeMap::new();
    for line in committed(&output) {
        let f: Vec<&str> = line.split(' ').collect();
        got.insert(
            (f[0].parse::<i64>().unwrap(), f[2].to_owned()),
            f[3].parse::<u64>().unwrap(),
        );
    }
    assert_eq!(got, expected);
    assert!(
        enrich::parse_event("12\tx")
            .unwrap_err()
            .contains("the user")
    );
}

#[test]
fn datagen_runs_each_pipeline_and_refuses_an_unknown_one() {
    for pipeline in ["stateless", "keyed", "rebalance"] {
        run(
            "datagen",
            json!({"records": 50_000, "pipeline": pipeline}),
            2,
            1,
        );
    }
    let error = JobRegistry::builtin()
        .compile("datagen", &json!({"pipeline": "sideways"}), 1)
        .unwrap_err();
    assert!(error.to_string().contains("\"pipeline\""), "{error}");
}

#[test]
fn bad_parameters_and_unknown_jobs_are_named() {
    let jobs = JobRegistry::builtin();
    let error = jobs.compile("enrich", &json!({}), 1).unwrap_err();
    assert!(error.to_string().contains("\"table\""), "{error}");
    let error = jobs
        .compile("wordcount", &json!({"input": 7}), 1)
        .unwrap_err();
    assert!(error.to_string().contains("\"input\""), "{error}");
    let error = jobs
        .compile("wordcount", &json!({"input": "x", "colour": 1}), 1)
        .unwrap_err();
    assert!(
        error.to_string().contains("unknown argument \"colour\""),
        "{error}"
    );
    let mut broken = JobRegistry::new();
    broken
        .register("broken", "panics", |_| panic!("a bug in the job"))
        .unwrap();
    let error = broken.compile("broken", &json!({}), 1).unwrap_err();
    assert!(error.to_string().contains("a bug in the job"), "{error}");
    let error = jobs.compile("nope", &json!({}), 1).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("known jobs: datagen, enrich, wordcount"),
        "{error}"
    );
}

#[test]
fn a_task_from_another_build_of_the_job_is_refused() {
    let jobs = JobRegistry::builtin();
    let params = json!({"records": 10});
    let graph = jobs.job_graph("datagen", &params, 2).unwrap();
    let mut args = graph.vertices[0].args.clone();
    let metrics = Arc::new(holdfast_dataflow::metrics::DataflowMetrics::default());
    let clock: Arc<dyn holdfast_dataflow::time::Clock> =
        Arc::new(holdfast_dataflow::time::SystemClock);
    assert!(
        jobs.task(&args, None, Arc::clone(&clock), Arc::clone(&metrics))
            .is_ok()
    );
    let mut other = args.clone();
    other["fingerprint"] = json!("0000000000000000");
    let error = jobs
        .task(&other, None, Arc::clone(&clock), Arc::clone(&metrics))
        .err()
        .unwrap();
    assert!(
        error.to_string().contains("differs from the submitted one"),
        "{error}"
    );
    args["vertex"] = json!(99);
    let error = jobs
        .task(&args, None, Arc::clone(&clock), Arc::clone(&metrics))
        .err()
        .unwrap();
    assert!(error.to_string().contains("\"vertex\""), "{error}");
    let error = jobs
        .task(&json!({"job": "datagen"}), None, clock, metrics)
        .err()
        .unwrap();
    assert!(error.to_string().contains("fingerprint"), "{error}");
}
