//! The `holdfast` binary: holdfast's command line with the built-in jobs,
//! whose inputs and outputs may be files or `kafka://` topics.

fn main() -> anyhow::Result<()> {
    // Fail points from FAILPOINTS, in a build with the `failpoints`
    // feature (the process tests') only: a release never reads it.
    #[cfg(feature = "failpoints")]
    let _failpoints = fail::FailScenario::setup();
    holdfast::main_with(holdfast::builtin_jobs())
}
