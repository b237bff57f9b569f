//! The warnings and errors the cluster processes logged during a run,
//! grouped by pattern (numbers and ids blanked), so a report can say what
//! went wrong on the way even when every measurement succeeded.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::process::ProcessLog;

/// How much of an example line a report repeats.
const MAX_EXAMPLE_CHARS: usize = 240;

/// Lines of one level and pattern.
#[derive(Clone, Debug, PartialEq)]
pub struct Pattern {
    /// `WARN` or `ERROR`.
    pub level: String,
    /// The line after its level, with every word holding a digit as `#`.
    pub pattern: String,
    /// How many lines.
    pub count: usize,
    /// Which kinds of process logged it (`jobmanager`, `taskmanager`,
    /// `standalone`).
    pub roles: BTreeSet<&'static str>,
    /// The first such line, without its timestamp.
    pub example: String,
}

impl Pattern {
    /// As JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "level": self.level,
            "count": self.count,
            "roles": self.roles,
            "example": self.example,
        })
    }

    /// One line for the report.
    pub fn describe(&self) -> String {
        format!(
            "  {:>4} × {} ({}): {}",
            self.count,
            self.level,
            self.roles.iter().copied().collect::<Vec<_>>().join(", "),
            self.example
        )
    }
}

/// Every WARN and ERROR line of `logs`, grouped; errors first, then by
/// count.
pub fn warnings(logs: &[ProcessLog]) -> Vec<Pattern> {
    let mut patterns: Vec<Pattern> = Vec::new();
    for log in logs {
        let role = role(&log.name);
        for line in log.text.lines() {
            let Some((level, rest)) = level_and_rest(line) else {
                continue;
            };
            let pattern = blank_numbers(rest);
            match patterns
                .iter_mut()
                .find(|p| p.level == level && p.pattern == pattern)
            {
                Some(found) => {
                    found.count += 1;
                    found.roles.insert(role);
                }
                None => patterns.push(Pattern {
                    level: level.to_owned(),
                    pattern,
                    count: 1,
                    roles: BTreeSet::from([role]),
                    example: rest.chars().take(MAX_EXAMPLE_CHARS).collect(),
                }),
            }
        }
    }
    patterns.sort_by(|a, b| {
        (a.level != "ERROR", std::cmp::Reverse(a.count))
            .cmp(&(b.level != "ERROR", std::cmp::Reverse(b.count)))
    });
    patterns
}

fn role(name: &str) -> &'static str {
    if name.starts_with("jm-") {
        "jobmanager"
    } else if name.starts_with("tm-") {
        "taskmanager"
    } else {
        "standalone"
    }
}

/// `TIMESTAMP  LEVEL rest` → (LEVEL, "LEVEL rest") for WARN and ERROR.
fn level_and_rest(line: &str) -> Option<(&str, &str)> {
    let after_time = line
        .trim_start()
        .split_once(char::is_whitespace)?
        .1
        .trim_start();
    let level = after_time.split_whitespace().next()?;
    matches!(level, "WARN" | "ERROR").then_some((level, after_time))
}

fn blank_numbers(text: &str) -> String {
    text.split_inclusive(|c: char| !c.is_ascii_alphanumeric())
        .map(|piece| {
            let word = piece.trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
            if word.chars().any(|c| c.is_ascii_digit()) {
                format!("#{}", &piece[word.len()..])
            } else {
                piece.to_owned()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_warnings_by_pattern() {
        let text = "2026-01-01T00:00:00.1Z  INFO a: fine\n\
                    2026-01-01T00:00:01.1Z  WARN a: lost job 0a1b2c after 30ms\n\
                    2026-01-01T00:00:02.1Z  WARN a: lost job 9f9f9f after 45ms\n\
                    2026-01-01T00:00:03.1Z ERROR b: broken\n";
        let logs = [
            ProcessLog {
                name: "jm-a-1".into(),
                text: text.into(),
            },
            ProcessLog {
                name: "tm-1".into(),
                text: "2026-01-01T00:00:04.1Z  WARN a: lost job ff00ff after 1ms\n".into(),
            },
        ];
        let found = warnings(&logs);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].level, "ERROR");
        assert_eq!(found[1].count, 3);
        assert_eq!(found[1].pattern, "WARN a: lost job # after #");
        assert_eq!(
            found[1].roles,
            BTreeSet::from(["jobmanager", "taskmanager"])
        );
        assert_eq!(found[1].example, "WARN a: lost job 0a1b2c after 30ms");
    }
}
