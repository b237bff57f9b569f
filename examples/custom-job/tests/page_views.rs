//! The example job, run in this process, gives the counts a plain loop
//! gives.

use std::collections::BTreeMap;

use holdfast_dataflow::{JobRegistry, LocalRun};
use serde_json::json;

#[test]
fn page_views_per_minute_match_a_plain_count() {
    let dir = tempfile::tempdir().unwrap();
    let mut jobs = JobRegistry::new();
    jobs.register(custom_job::NAME, "example", custom_job::build)
        .unwrap();
    let params = json!({"clicks": 20_000, "output": dir.path()});
    let compiled = jobs.compile(custom_job::NAME, &params, 2).unwrap();
    LocalRun::with_parallelism(2)
        .run_compiled(std::sync::Arc::new(compiled))
        .unwrap();

    let mut got = BTreeMap::new();
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        if !path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("part-")
        {
            continue;
        }
        for line in std::fs::read_to_string(path).unwrap().lines() {
            let fields: Vec<&str> = line.split(' ').collect();
            let count: u64 = fields[2].parse().unwrap();
            got.insert(
                (fields[0].parse::<i64>().unwrap(), fields[1].to_string()),
                count,
            );
        }
    }
    let mut expected = BTreeMap::new();
    for i in 0..20_000 {
        let c = custom_job::click(i);
        *expected
            .entry((c.time / 60_000 * 60_000, c.page))
            .or_insert(0u64) += 1;
    }
    assert_eq!(got, expected);
}
