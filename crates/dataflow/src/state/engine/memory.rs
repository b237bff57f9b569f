//! [`MemoryEngine`]: the reference engine, a persistent ordered map (a
//! snapshot is a pointer copy).

use std::sync::Arc;

use imbl::OrdMap;

use super::{
    BatchEntry, EngineError, EngineSnapshot, RangeFn, ScanFn, SortedFill, StateEngine,
    fill_ascending, scan_start,
};

type Map = OrdMap<Arc<[u8]>, Arc<[u8]>>;

/// Keeps everything in memory: for tests, and as the reference every
/// engine's conformance is checked against.
#[derive(Clone, Debug, Default)]
pub struct MemoryEngine {
    map: Map,
}

impl MemoryEngine {
    /// An empty engine.
    pub fn new() -> MemoryEngine {
        MemoryEngine::default()
    }
}

impl StateEngine for MemoryEngine {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, EngineError> {
        Ok(self.map.get(key).map(|v| v.to_vec()))
    }

    fn write(&mut self, batch: Vec<BatchEntry>) -> Result<(), EngineError> {
        for (key, value) in batch {
            match value {
                Some(value) => {
                    self.map.insert(Arc::from(key), Arc::from(value));
                }
                None => {
                    self.map.remove(key.as_slice());
                }
            }
        }
        Ok(())
    }

    fn write_sorted(&mut self, fill: &mut SortedFill<'_>) -> Result<(), EngineError> {
        let mut batch = Vec::new();
        fill_ascending("memory", fill, &mut |key, value| {
            batch.push((key.to_vec(), value.map(<[u8]>::to_vec)));
            Ok(())
        })?;
        self.write(batch)
    }

    fn scan_from(
        &self,
        prefix: &[u8],
        from: &[u8],
        each: &mut RangeFn<'_>,
    ) -> Result<(), EngineError> {
        let start: Arc<[u8]> = Arc::from(scan_start(prefix, from));
        for (key, value) in self.map.range(start..) {
            if !key.starts_with(prefix) || !each(key, value)? {
                break;
            }
        }
        Ok(())
    }

    fn snapshot(&self) -> Box<dyn EngineSnapshot> {
        Box::new(MemorySnapshot(self.map.clone()))
    }

    fn describe(&self) -> String {
        "memory".into()
    }
}

struct MemorySnapshot(Map);

impl EngineSnapshot for MemorySnapshot {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, EngineError> {
        Ok(self.0.get(key).map(|v| v.to_vec()))
    }

    fn scan_prefix(&self, prefix: &[u8], each: &mut ScanFn<'_>) -> Result<(), EngineError> {
        let from: Arc<[u8]> = Arc::from(prefix);
        for (key, value) in self.0.range(from..) {
            if !key.starts_with(prefix) {
                break;
            }
            each(key, value)?;
        }
        Ok(())
    }
}
