//! Keys to subtasks, as Flink does it: a key hashes into one of
//! `max_parallelism` key groups, and key groups are spread over the
//! subtasks in contiguous ranges (so state can later be rescaled by key
//! group). The hash is fixed (FxHash with a murmur finalizer), so every
//! process agrees.

use std::hash::{Hash, Hasher};

use rustc_hash::FxHasher;

/// `pipeline.max-parallelism`'s default: how many key groups a job's keys
/// hash into, fixed at its first run (Flink's default for parallelisms up
/// to 128).
pub const DEFAULT_MAX_PARALLELISM: u32 = 128;

/// The most key groups a job may have (Flink's bound).
pub const UPPER_MAX_PARALLELISM: u32 = 32_768;

/// The hash of a key: the same in every process.
pub fn key_hash<K: Hash + ?Sized>(key: &K) -> u64 {
    let mut hasher = FxHasher::default();
    key.hash(&mut hasher);
    fmix64(hasher.finish())
}

/// MurmurHash3's 64-bit finalizer: spreads FxHash's weak low bits.
fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The key group (of `max_parallelism`) of the key with hash `hash`.
pub fn key_group(hash: u64, max_parallelism: u32) -> u32 {
    (hash % u64::from(max_parallelism.max(1))) as u32
}

/// The subtask of `parallelism` that owns the key with hash `hash`.
pub fn subtask_for(hash: u64, max_parallelism: u32, parallelism: u32) -> u32 {
    let group = u64::from(key_group(hash, max_parallelism));
    (group * u64::from(parallelism) / u64::from(max_parallelism.max(1))) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_spread_over_every_subtask_and_stay_put() {
        let max = DEFAULT_MAX_PARALLELISM;
        let mut per = [0u32; 4];
        for word in 0..10_000 {
            let subtask = subtask_for(key_hash(&format!("w{word}")), max, 4);
            per[subtask as usize] += 1;
        }
        assert!(per.iter().all(|n| (2_000..3_000).contains(n)), "{per:?}");
        assert_eq!(key_hash("fixed"), key_hash(&"fixed".to_string()));
    }
}
