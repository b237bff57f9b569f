//! librdkafka properties a source or sink was given, whose `Debug` never
//! shows a secret's value (`sasl.password`, `ssl.key.password`, …).

use std::collections::BTreeMap;
use std::ops::{Deref, DerefMut};

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_value_never_shows() {
        let mut properties = Properties::default();
        properties.insert("sasl.password".into(), "hunter2".into());
        properties.insert("linger.ms".into(), "5".into());
        let shown = format!("{properties:?}");
        assert_eq!(shown, r#"{"linger.ms": "5", "sasl.password": "***"}"#);
    }
}
