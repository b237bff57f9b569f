//! Tier 2: at least 1,000 seeded schedules of cuts, crashes and rejoins
//! over several contenders and observers, on the embedded backend and a
//! virtual clock, each checked against invariants 1–4 of
//! HA contract §9 (`docs/HA-CONTRACT.md`).
//!
//! `HOLDFAST_SIM_SCHEDULES=N` changes how many schedules run (default 1,000,
//! split over four tests); `HOLDFAST_SIM_SEED=S` runs only seed `S`, to
//! reproduce a failure (the seed is printed with it).

mod sim;

use sim::invariants::{
    a_standby_takes_over, at_most_one_leader, epochs_only_grow, short_suspensions_revoke_nothing,
};
use sim::run::run;
use sim::schedule::Schedule;

const PARTS: u64 = 4;

fn check(seed: u64) -> Result<(), String> {
    let schedule = Schedule::generate(seed);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .map_err(|error| error.to_string())?;
    let trace = runtime.block_on(run(&schedule));
    let mut violations = Vec::new();
    for (name, found) in [
        ("1 at most one leader", at_most_one_leader(&trace)),
        ("2 epochs only grow", epochs_only_grow(&trace)),
        (
            "3 short suspensions revoke nothing",
            short_suspensions_revoke_nothing(&schedule, &trace),
        ),
        (
            "4 a standby takes over in time",
            a_standby_takes_over(&schedule, &trace),
        ),
    ] {
        violations.extend(
            found
                .into_iter()
                .map(|violation| format!("invariant {name}: {violation}")),
        );
    }
    if violations.is_empty() {
        return Ok(());
    }
    Err(format!(
        "seed {seed} (rerun with HOLDFAST_SIM_SEED={seed}) broke:\n  {}\nschedule: {schedule:#?}\ntrace: {trace:#?}",
        violations.join("\n  ")
    ))
}

fn run_part(part: u64) {
    if let Ok(seed) = std::env::var("HOLDFAST_SIM_SEED") {
        let seed: u64 = seed.parse().expect("HOLDFAST_SIM_SEED must be a number");
        if part == 0 {
            check(seed).unwrap_or_else(|failure| panic!("{failure}"));
        }
        return;
    }
    let total: u64 = std::env::var("HOLDFAST_SIM_SCHEDULES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(1_000);
    let per_part = total.div_ceil(PARTS);
    let seeds = part * per_part..((part + 1) * per_part).min(total);
    let count = seeds.end - seeds.start;
    let failures: Vec<String> = seeds.filter_map(|seed| check(seed).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {count} schedules failed; the first:\n{}",
        failures.len(),
        failures[0]
    );
    assert!(count > 0, "no schedule ran");
}

#[test]
fn schedules_part_1_of_4() {
    run_part(0);
}

#[test]
fn schedules_part_2_of_4() {
    run_part(1);
}

#[test]
fn schedules_part_3_of_4() {
    run_part(2);
}

#[test]
fn schedules_part_4_of_4() {
    run_part(3);
}
