//! `custom-job`: holdfast's command line with one more job.

fn main() -> anyhow::Result<()> {
    let mut jobs = holdfast_dataflow::JobRegistry::builtin();
    jobs.register(
        custom_job::NAME,
        "page views per page per minute (an example of your own job)",
        custom_job::build,
    )?;
    holdfast::main_with(jobs)
}
