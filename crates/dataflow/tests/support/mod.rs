//! What the dataflow tests share.
#![allow(dead_code)]

use std::path::Path;

/// Every committed line of the part files in `dir`, sorted (hidden,
/// uncommitted files are not output).
pub fn committed(dir: &Path) -> Vec<String> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("part-") {
            all.extend(
                std::fs::read_to_string(&path)
                    .unwrap()
                    .lines()
                    .map(str::to_owned),
            );
        }
    }
    all.sort();
    all
}

/// The names of the hidden files in `dir`.
pub fn hidden(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}
