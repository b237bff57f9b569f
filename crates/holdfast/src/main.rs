//! The `holdfast` binary: holdfast's command line with the built-in jobs.

fn main() -> anyhow::Result<()> {
    holdfast::main_with(holdfast_dataflow::JobRegistry::builtin())
}
