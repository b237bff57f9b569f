//! holdfast's built-in jobs: [`wordcount`], [`enrich`] (the incident's job)
//! and [`datagen`] (benchmarks).

pub mod datagen;
pub mod enrich;
pub mod wordcount;

use holdfast_executor::RegisterError;

use crate::registry::JobRegistry;

/// Registers every built-in job.
pub fn register_all(registry: &mut JobRegistry) -> Result<(), RegisterError> {
    registry.register(
        wordcount::NAME,
        "counts the words of text files (input, output)",
        wordcount::build,
    )?;
    registry.register(
        enrich::NAME,
        "the incident's job: events enriched from a lookup table loaded from a file and reloaded on a \
         schedule, counted per attribute in event-time windows",
        enrich::build,
    )?;
    registry.register(
        datagen::NAME,
        "generated records through a stateless, keyed or rebalance pipeline (benchmarks)",
        datagen::build,
    )?;
    Ok(())
}
