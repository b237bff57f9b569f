//! `pipeline.max-parallelism` — how many key groups a job's keys hash
//! into, chosen at submission (or by the job itself), carried in the job
//! graph so that every task agrees, and the bound on every operator's
//! parallelism — and operator ids (`uid`), which state is filed under.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use holdfast_dataflow::jobs::datagen;
use holdfast_dataflow::sink::Discard;
use holdfast_dataflow::source::Values;
use holdfast_dataflow::{Dataflow, JobRegistry, LocalRun};
use serde_json::json;
use support::committed;

#[test]
fn a_parallelism_above_the_max_is_refused_naming_the_operator_and_the_key() {
    let jobs = JobRegistry::builtin();
    let params = json!({"records": 10, "pipeline": "keyed"});
    let error = jobs
        .compile_with("datagen", &params, 5, Some(4))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("has parallelism 5, above the job's pipeline.max-parallelism 4")
            && error.contains("operator \"generate\""),
        "{error}"
    );
    for bad in [0, 40_000] {
        let error = jobs
            .compile_with("datagen", &params, 1, Some(bad))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(&format!(
                "pipeline.max-parallelism is {bad}; it must be 1 to 32768"
            )),
            "{error}"
        );
    }
    // At the max itself it compiles; without one the default is 128.
    assert_eq!(
        jobs.compile_with("datagen", &params, 4, Some(4))
            .unwrap()
            .max_parallelism(),
        4
    );
    assert_eq!(
        jobs.compile("datagen", &params, 4)
            .unwrap()
            .max_parallelism(),
        128
    );
}

#[test]
fn a_jobs_own_max_parallelism_wins_over_the_submitters() {
    let mut jobs = JobRegistry::new();
    jobs.register("own", "sets its own max parallelism", |_| {
        let flow = Dataflow::new("own");
        flow.set_max_parallelism(7);
        flow.source("values", Values::new(vec![1u64, 2, 3]))
            .sink("sink", Discard::new());
        Ok(flow)
    })
    .unwrap();
    let compiled = jobs.compile_with("own", &json!({}), 2, Some(64)).unwrap();
    assert_eq!(compiled.max_parallelism(), 7);
}

#[test]
fn the_max_travels_in_the_job_graph_and_a_task_of_another_max_is_refused() {
    let jobs = JobRegistry::builtin();
    let params = json!({"records": 10, "pipeline": "keyed"});
    let graph = jobs
        .job_graph_with("datagen", &params, 2, Some(16))
        .unwrap();
    let args = graph.vertices[1].args.clone();
    assert_eq!(args["max_parallelism"], 16);
    let metrics = Arc::new(holdfast_dataflow::metrics::DataflowMetrics::default());
    let clock: Arc<dyn holdfast_dataflow::time::Clock> =
        Arc::new(holdfast_dataflow::time::SystemClock);
    assert!(
        jobs.task(&args, None, Arc::clone(&clock), Arc::clone(&metrics))
            .is_ok()
    );
    // Key groups decide where state lives: the same job with another
    // max is another plan.
    let mut other = args.clone();
    other["max_parallelism"] = json!(32);
    let Err(error) = jobs.task(&other, None, clock, metrics) else {
        panic!("a task of another max parallelism should be refused");
    };
    let error = error.to_string();
    assert!(error.contains("fingerprint"), "{error}");
}

#[test]
fn keyed_results_are_right_with_as_few_key_groups_as_subtasks() {
    // Three key groups for three subtasks: each subtask owns exactly one,
    // so the partitioner and the keyed state must agree on every key.
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out");
    let (records, keys) = (20_000u64, 50u32);
    let params = json!({"records": records, "keys": keys, "pipeline": "keyed", "output": output});
    let compiled = JobRegistry::builtin()
        .compile_with("datagen", &params, 3, Some(3))
        .unwrap();
    let run = LocalRun {
        parallelism: 3,
        taskmanagers: 2,
        ..LocalRun::default()
    };
    run.run_compiled(Arc::new(compiled)).expect("the job runs");
    let mut largest: BTreeMap<u32, i64> = BTreeMap::new();
    for line in committed(&output) {
        let (key, sum) = line.split_once('\t').expect("key<TAB>sum");
        let entry = largest.entry(key.parse().unwrap()).or_insert(i64::MIN);
        *entry = (*entry).max(sum.parse().unwrap());
    }
    let mut expected: BTreeMap<u32, i64> = BTreeMap::new();
    for i in 0..records {
        let r = datagen::record(i, keys);
        *expected.entry(r.key).or_insert(0) += r.value;
    }
    assert_eq!(largest, expected);
}

#[test]
fn operator_ids_are_unique_not_empty_and_default_to_names() {
    let build = |uids: [Option<&str>; 3]| {
        let flow = Dataflow::new("ids");
        let mut numbers = flow.source("numbers", Values::new(vec![1u64, 2, 3]));
        if let Some(uid) = uids[0] {
            numbers = numbers.uid(uid);
        }
        let mut sums = numbers
            .key_by(|n: &u64| n % 2)
            .sum("sum", |n: &u64| *n as i64);
        if let Some(uid) = uids[1] {
            sums = sums.uid(uid);
        }
        let mut sink = sums.sink("sink", Discard::new());
        if let Some(uid) = uids[2] {
            sink = sink.uid(uid);
        }
        let _ = sink;
        holdfast_dataflow::plan::CompiledPlan::compile(flow.build().unwrap(), 1)
    };
    let compiled = build([Some("source-v1"), None, None]).unwrap();
    assert_eq!(compiled.uids(), ["source-v1", "sum", "sink"]);
    assert_eq!(compiled.stateful_without_uid(), ["sum", "sink"]);
    let error = build([None, Some("numbers"), None])
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("operators \"numbers\" and \"sum\" both have the id \"numbers\""),
        "{error}"
    );
    let error = build([None, None, Some(" ")]).unwrap_err().to_string();
    assert!(
        error.contains("operator \"sink\" has an empty uid"),
        "{error}"
    );
    // The ids are part of the plan's fingerprint: state is filed under them.
    let a = build([Some("a"), None, None]).unwrap();
    let b = build([Some("b"), None, None]).unwrap();
    assert_ne!(a.fingerprint(), b.fingerprint());
}

#[test]
fn the_built_in_jobs_give_every_stateful_operator_a_uid() {
    let jobs = JobRegistry::builtin();
    for (name, params) in [
        ("datagen", json!({"pipeline": "keyed"})),
        (
            "datagen",
            json!({"pipeline": "stateless", "output": "/tmp/x"}),
        ),
        ("wordcount", json!({"input": "/tmp/in"})),
    ] {
        let compiled = jobs.compile(name, &params, 2).unwrap();
        assert!(
            compiled.stateful_without_uid().is_empty(),
            "{name}: {:?}",
            compiled.stateful_without_uid()
        );
    }
}
