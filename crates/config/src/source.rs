//! [`ConfigSource`]: the raw `key → value` pairs of one process, loaded from
//! a Flink-style YAML file and `-D key=value` overrides, each remembering
//! where it came from so errors can point at it.
//!
//! ```text
//!   config.yaml ──flatten──▶ ┐
//!                            ├──▶ ConfigSource { key → (value, origin) }
//!   -D key=value ──────────▶ ┘      (later sources win)
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Where a value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A YAML configuration file.
    File(PathBuf),
    /// A `-D key=value` override on the command line.
    Define,
    /// Set by the program (e.g. a command-line flag for a common key).
    Program(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File(path) => write!(f, "{}", path.display()),
            Origin::Define => f.write_str("-D"),
            Origin::Program(what) => f.write_str(what),
        }
    }
}

/// One value and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The value as text (YAML scalars are turned into their text).
    pub value: String,
    /// Where it came from.
    pub origin: Origin,
}

/// Why a source could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not YAML.
    #[error("{origin} is not valid YAML: {source}")]
    Yaml {
        /// The file.
        origin: Origin,
        /// The parser's error.
        #[source]
        source: serde_norway::Error,
    },
    /// A map key that is not a string.
    #[error("{origin}: a key under {prefix:?} is not a string: {key}")]
    NonStringKey {
        /// The file.
        origin: Origin,
        /// The dotted path of the enclosing map ("" at the top).
        prefix: String,
        /// The key, debug-printed.
        key: String,
    },
    /// A value that is not a scalar or a map (a list, a tagged value, null).
    #[error("{origin}: {key}: unsupported value (expected a string, number or boolean)")]
    UnsupportedValue {
        /// The file.
        origin: Origin,
        /// The dotted key.
        key: String,
    },
    /// The YAML document's top level is not a map.
    #[error("{origin}: the top level must be a map of keys")]
    NotAMap {
        /// The file.
        origin: Origin,
    },
    /// A `-D` argument without `=` or with an empty key.
    #[error("-D {define:?}: expected KEY=VALUE")]
    BadDefine {
        /// The argument as given.
        define: String,
    },
}

/// The raw configuration of one process. Later sources override earlier ones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConfigSource {
    entries: BTreeMap<String, Entry>,
}

impl ConfigSource {
    /// No keys.
    pub fn new() -> Self {
        Self::default()
    }

    /// The usual start of a process: the optional `--config` file, then the
    /// `-D key=value` overrides in order.
    pub fn load(file: Option<&Path>, defines: &[String]) -> Result<Self, SourceError> {
        let mut source = match file {
            Some(path) => Self::from_yaml_file(path)?,
            None => Self::new(),
        };
        for define in defines {
            source.apply_define(define)?;
        }
        Ok(source)
    }

    /// Reads a Flink-style YAML file (flat dotted keys, nested maps, or both).
    pub fn from_yaml_file(path: &Path) -> Result<Self, SourceError> {
        let text = std::fs::read_to_string(path).map_err(|source| SourceError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::from_yaml_str(&text, Origin::File(path.to_owned()))
    }

    /// Parses YAML text; `origin` is recorded for every key.
    pub fn from_yaml_str(text: &str, origin: Origin) -> Result<Self, SourceError> {
        let yaml: serde_norway::Value =
            serde_norway::from_str(text).map_err(|source| SourceError::Yaml {
                origin: origin.clone(),
                source,
            })?;
        let mut source = Self::new();
        match yaml {
            serde_norway::Value::Null => {}
            serde_norway::Value::Mapping(_) => source.flatten("", &yaml, &origin)?,
            _ => return Err(SourceError::NotAMap { origin }),
        }
        Ok(source)
    }

    /// Applies one `-D key=value` argument (the `-D` itself already removed).
    pub fn apply_define(&mut self, define: &str) -> Result<(), SourceError> {
        match define.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => {
                self.set(key.trim(), value.trim(), Origin::Define);
                Ok(())
            }
            _ => Err(SourceError::BadDefine {
                define: define.to_owned(),
            }),
        }
    }

    /// Sets one key, replacing any earlier value.
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>, origin: Origin) {
        let value = value.into();
        self.entries.insert(key.into(), Entry { value, origin });
    }

    /// One key's value and origin.
    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.get(key)
    }

    /// Every key in order, with its value and origin.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Entry)> {
        self.entries
            .iter()
            .map(|(key, entry)| (key.as_str(), entry))
    }

    /// Every key and value, without origins.
    pub fn pairs(&self) -> BTreeMap<String, String> {
        self.iter()
            .map(|(key, entry)| (key.to_owned(), entry.value.clone()))
            .collect()
    }

    /// How many keys are set.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no key is set.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Flattens nested maps into dotted keys (Flink 2 accepts both forms).
    fn flatten(
        &mut self,
        prefix: &str,
        value: &serde_norway::Value,
        origin: &Origin,
    ) -> Result<(), SourceError> {
        use serde_norway::Value;
        let text = match value {
            Value::Mapping(map) => {
                for (key, value) in map {
                    let Value::String(key) = key else {
                        return Err(SourceError::NonStringKey {
                            origin: origin.clone(),
                            prefix: prefix.to_owned(),
                            key: format!("{key:?}"),
                        });
                    };
                    let full = if prefix.is_empty() {
                        key.clone()
                    } else {
                        format!("{prefix}.{key}")
                    };
                    self.flatten(&full, value, origin)?;
                }
                return Ok(());
            }
            Value::String(text) => text.clone(),
            Value::Bool(flag) => flag.to_string(),
            Value::Number(number) => number.to_string(),
            _ => {
                return Err(SourceError::UnsupportedValue {
                    origin: origin.clone(),
                    key: prefix.to_owned(),
                });
            }
        };
        self.set(prefix, text, origin.clone());
        Ok(())
    }
}
