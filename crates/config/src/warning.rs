//! [`Warning`]: things worth telling the operator that do not stop the
//! process, such as keys nobody reads (usually misspellings).

use std::fmt;

use crate::keys;
use crate::source::Origin;

/// A problem that does not make the configuration unusable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Warning {
    /// A key no component reads; it is ignored.
    UnknownKey {
        /// The key as given.
        key: String,
        /// Where it came from.
        origin: Origin,
        /// A known key within edit distance 2, if any.
        suggestion: Option<&'static str>,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::UnknownKey {
                key,
                origin,
                suggestion,
            } => {
                write!(
                    f,
                    "unknown configuration key {key} (from {origin}) is ignored"
                )?;
                if let Some(suggestion) = suggestion {
                    write!(f, "; did you mean {suggestion}?")?;
                }
                Ok(())
            }
        }
    }
}

/// The known key closest to `key` (case-insensitive edit distance ≤ 2).
pub fn suggest(key: &str) -> Option<&'static str> {
    let key = key.to_ascii_lowercase();
    keys::all_names()
        .map(|name| (edit_distance(&key, &name.to_ascii_lowercase()), name))
        .filter(|(distance, _)| *distance <= 2)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, name)| name)
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitute.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distances() {
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("heartbeat.timeout", "heartbeat.timeout"), 0);
        assert_eq!(suggest("heartbeat.timeuot"), Some("heartbeat.timeout"));
        assert_eq!(
            suggest("taskmanager.numberoftaskslots"),
            Some("taskmanager.numberOfTaskSlots")
        );
        assert_eq!(suggest("something.else.entirely"), None);
    }
}
