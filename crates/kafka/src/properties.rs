//! librdkafka properties a source or sink was given, whose `Debug` never
//! shows a secret's value (`sasl.password`, `ssl.key.password`, …), and
//! whose values may name a secret instead of holding it, with the syntax of
//! Kafka's config providers: `${env:NAME}` (an environment variable of the
//! TaskManager) and `${file:PATH:KEY}` (key `KEY` of the Java properties
//! file `PATH` on the TaskManager). The job graph, the HA store and REST
//! then hold only the reference; the value is read where the client is
//! made, each time one is.

use std::collections::BTreeMap;
use std::ops::{Deref, DerefMut};
use std::path::Path;

use holdfast_dataflow::connector::is_secret;

/// Property name → value.
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct Properties(BTreeMap<String, String>);

impl Deref for Properties {
    type Target = BTreeMap<String, String>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for Properties {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl std::fmt::Debug for Properties {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(key, value)| {
                let shown = if is_secret(key) {
                    "***"
                } else {
                    value.as_str()
                };
                (key, shown)
            }))
            .finish()
    }
}

/// A reference to a secret that cannot be resolved, or is malformed. Names
/// the property and what it refers to, never a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PropertyError {
    /// A `${env:…}` or `${file:…}` reference that is not
    /// `${env:NAME}` or `${file:PATH:KEY}` (the value is not shown: it may
    /// be a secret after all).
    #[error(
        "property {property}: a ${{{provider}:…}} reference must read ${{env:NAME}} or \
         ${{file:PATH:KEY}}, closed by }}"
    )]
    Malformed {
        /// The property.
        property: String,
        /// `env` or `file`.
        provider: &'static str,
    },
    /// The environment variable is not set (or not UTF-8).
    #[error("property {property}: environment variable {name} is not set on this TaskManager")]
    NoVariable {
        /// The property.
        property: String,
        /// The variable.
        name: String,
    },
    /// The file cannot be read, or is not a properties file.
    #[error("property {property}: cannot read {path}: {cause}")]
    File {
        /// The property.
        property: String,
        /// The file.
        path: String,
        /// Why.
        cause: String,
    },
    /// The file has no such key.
    #[error("property {property}: {path} has no key {key}")]
    NoKey {
        /// The property.
        property: String,
        /// The file.
        path: String,
        /// The key.
        key: String,
    },
}

/// One `${provider:…}` reference in a value.
#[derive(Debug, PartialEq, Eq)]
enum Reference<'a> {
    Env(&'a str),
    File { path: &'a str, key: &'a str },
}

/// The pieces of `value`: literal text and references, in order. As in
/// Kafka's config providers, only `${env:…}` and `${file:…}` are
/// references; any other `${` is text (a password may hold one).
fn pieces<'a>(
    property: &str,
    value: &'a str,
) -> Result<Vec<Result<&'a str, Reference<'a>>>, PropertyError> {
    let mut out = Vec::new();
    let mut rest = value;
    let mut at = 0;
    while let Some(found) = rest[at..].find("${") {
        let start = at + found;
        let after = &rest[start + 2..];
        let provider = if after.starts_with("env:") {
            "env"
        } else if after.starts_with("file:") {
            "file"
        } else {
            at = start + 2;
            continue;
        };
        let malformed = || PropertyError::Malformed {
            property: property.to_owned(),
            provider,
        };
        let end = after.find('}').ok_or_else(malformed)?;
        let inner = &after[provider.len() + 1..end];
        let reference = match provider {
            "env" if !inner.is_empty() => Reference::Env(inner),
            "file" => match inner.rsplit_once(':') {
                Some((path, key)) if !path.is_empty() && !key.is_empty() => {
                    Reference::File { path, key }
                }
                _ => return Err(malformed()),
            },
            _ => return Err(malformed()),
        };
        out.push(Ok(&rest[..start]));
        out.push(Err(reference));
        rest = &after[end + 1..];
        at = 0;
    }
    out.push(Ok(rest));
    Ok(out)
}

impl Properties {
    /// Checks that every secret reference is well formed (when the job is
    /// built: the variables and files are the TaskManagers', not looked at
    /// here).
    pub(crate) fn check_references(&self) -> Result<(), PropertyError> {
        for (key, value) in &self.0 {
            pieces(key, value)?;
        }
        Ok(())
    }

    /// The properties with every reference replaced by what it names, from
    /// this process's environment and files.
    pub(crate) fn resolve(&self) -> Result<Properties, PropertyError> {
        self.resolve_with(
            |name| std::env::var(name).ok(),
            |path| std::fs::read(path).map_err(|error| error.to_string()),
        )
    }

    /// [`resolve`](Self::resolve) with the environment and files as
    /// arguments (tests pass their own).
    fn resolve_with(
        &self,
        env: impl Fn(&str) -> Option<String>,
        file: impl Fn(&Path) -> Result<Vec<u8>, String>,
    ) -> Result<Properties, PropertyError> {
        let mut resolved = BTreeMap::new();
        for (property, value) in &self.0 {
            let mut out = String::with_capacity(value.len());
            for piece in pieces(property, value)? {
                match piece {
                    Ok(text) => out.push_str(text),
                    Err(Reference::Env(name)) => {
                        out.push_str(&env(name).ok_or_else(|| PropertyError::NoVariable {
                            property: property.clone(),
                            name: name.to_owned(),
                        })?)
                    }
                    Err(Reference::File { path, key }) => {
                        let file_error = |cause: String| PropertyError::File {
                            property: property.clone(),
                            path: path.to_owned(),
                            cause,
                        };
                        let bytes = file(Path::new(path)).map_err(file_error)?;
                        let entries = java_properties::read(bytes.as_slice())
                            .map_err(|error| file_error(error.to_string()))?;
                        let secret = entries.get(key).ok_or_else(|| PropertyError::NoKey {
                            property: property.clone(),
                            path: path.to_owned(),
                            key: key.to_owned(),
                        })?;
                        out.push_str(secret);
                    }
                }
            }
            resolved.insert(property.clone(), out);
        }
        Ok(Properties(resolved))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn properties(entries: &[(&str, &str)]) -> Properties {
        Properties(
            entries
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }

    fn env(name: &str) -> Option<String> {
        (name == "KAFKA_PASSWORD").then(|| "hunter2".to_owned())
    }

    fn file(path: &Path) -> Result<Vec<u8>, String> {
        match path.to_str() {
            Some("/etc/kafka/client.properties") => {
                Ok(b"# client secrets\nusername = alice\npassword: s3cr=t\n".to_vec())
            }
            _ => Err("No such file or directory (os error 2)".into()),
        }
    }

    #[test]
    fn references_are_replaced_by_what_they_name_and_the_rest_is_kept() {
        let given = properties(&[
            ("sasl.password", "${env:KAFKA_PASSWORD}"),
            (
                "sasl.jaas.config",
                "user=\"${file:/etc/kafka/client.properties:username}\" \
                 pass=\"${file:/etc/kafka/client.properties:password}\"",
            ),
            ("linger.ms", "5"),
            ("client.id", "a-$-{not}-${env:KAFKA_PASSWORD}!"),
        ]);
        given.check_references().unwrap();
        let resolved = given.resolve_with(env, file).unwrap();
        assert_eq!(resolved["sasl.password"], "hunter2");
        assert_eq!(
            resolved["sasl.jaas.config"],
            "user=\"alice\" pass=\"s3cr=t\""
        );
        assert_eq!(resolved["linger.ms"], "5");
        assert_eq!(resolved["client.id"], "a-$-{not}-hunter2!");
    }

    #[test]
    fn what_cannot_be_resolved_is_named_without_a_value() {
        let fails = |value: &str| {
            properties(&[("sasl.password", value)])
                .resolve_with(env, file)
                .unwrap_err()
        };
        assert_eq!(
            fails("${env:NOPE}").to_string(),
            "property sasl.password: environment variable NOPE is not set on this TaskManager"
        );
        assert_eq!(
            fails("${file:/etc/kafka/client.properties:token}").to_string(),
            "property sasl.password: /etc/kafka/client.properties has no key token"
        );
        assert!(
            fails("${file:/nowhere:password}")
                .to_string()
                .starts_with("property sasl.password: cannot read /nowhere: No such file")
        );
        for malformed in [
            "${env:}",
            "${file:/only-a-path}",
            "${env:UNCLOSED",
            "${file:/p:}",
        ] {
            let error = properties(&[("sasl.password", malformed)])
                .check_references()
                .unwrap_err();
            assert!(
                matches!(error, PropertyError::Malformed { .. }),
                "{malformed}: {error}"
            );
            assert!(error.to_string().contains("${env:NAME}"), "{error}");
            assert!(
                !error.to_string().contains("only-a-path")
                    && !error.to_string().contains("UNCLOSED"),
                "never the value: {error}"
            );
        }
        // Any other `${` is text, as in Kafka: a password may hold one.
        let kept = properties(&[("sasl.password", "pa${ss}${vault:x}$${env:KAFKA_PASSWORD}")])
            .resolve_with(env, file)
            .unwrap();
        assert_eq!(kept["sasl.password"], "pa${ss}${vault:x}$hunter2");
    }

    #[test]
    fn a_secret_value_never_shows() {
        let mut properties = Properties::default();
        properties.insert("sasl.password".into(), "hunter2".into());
        properties.insert("linger.ms".into(), "5".into());
        let shown = format!("{properties:?}");
        assert_eq!(shown, r#"{"linger.ms": "5", "sasl.password": "***"}"#);
    }
}
