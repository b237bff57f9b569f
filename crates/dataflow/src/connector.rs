//! Where a built-in job's `input` or `output` may point besides files:
//! [`Connector`]s by URL scheme (`kafka://…`, registered by the binary
//! that links the connector's crate, so that this crate depends on none of
//! them), looked up through [`Connectors`] when a job is built.
//!
//! An endpoint is `SCHEME://AUTHORITY/PATH?KEY=VALUE&…` ([`Endpoint`]); what
//! the authority, path and options mean is the connector's (for Kafka: the
//! bootstrap servers, the topic, and the source's or sink's options). A
//! connector takes the options it knows and the job is refused, naming
//! the rest, when any is left: a misspelt option never silently falls back
//! to a default.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::sink::Sink;
use crate::source::Source;

/// A parsed `SCHEME://AUTHORITY/PATH?KEY=VALUE&…`. Its `Debug` hides the
/// values of options that look secret ([`redacted`]).
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    text: String,
    scheme: String,
    authority: String,
    path: String,
    options: BTreeMap<String, String>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Endpoint")
            .field(&redacted(&self.text))
            .finish()
    }
}

/// Whether option `key` holds a secret (a password, a client secret, a
/// private key, a JAAS configuration): its value is never shown.
pub fn is_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    [
        "password",
        "secret",
        "jaas",
        "key.pem",
        "token",
        "credential",
    ]
    .iter()
    .any(|word| key.contains(word))
}

/// `text` (a connector URL) with the values of secret options ([`is_secret`])
/// written `***`, for errors and logs.
pub fn redacted(text: &str) -> String {
    let Some((location, query)) = text.split_once('?') else {
        return text.to_owned();
    };
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if is_secret(key) => format!("{key}=***"),
            _ => pair.to_owned(),
        })
        .collect();
    format!("{location}?{}", pairs.join("&"))
}

impl Endpoint {
    /// Parses `text`; `None` when it has no `SCHEME://` (a plain path).
    /// Options are `KEY=VALUE` pairs separated by `&`, with `%XX` escapes
    /// decoded; a key given twice is an error.
    pub fn parse(text: &str) -> Option<Result<Endpoint, String>> {
        let (scheme, rest) = text.split_once("://")?;
        if scheme.is_empty()
            || !scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.')
        {
            return None;
        }
        Some(Endpoint::parse_rest(text, scheme, rest))
    }

    fn parse_rest(text: &str, scheme: &str, rest: &str) -> Result<Endpoint, String> {
        let (location, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = location.split_once('/').unwrap_or((location, ""));
        let mut options = BTreeMap::new();
        for pair in query.split('&').filter(|pair| !pair.is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("option {pair:?} has no value (KEY=VALUE)"))?;
            let key = decode(key)?;
            if options.insert(key.clone(), decode(value)?).is_some() {
                return Err(format!("option {key:?} is given twice"));
            }
        }
        Ok(Endpoint {
            text: text.to_owned(),
            scheme: scheme.to_ascii_lowercase(),
            authority: decode(authority)?,
            path: decode(path)?,
            options,
        })
    }

    /// The whole text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The scheme, lower-cased.
    pub fn scheme(&self) -> &str {
        &self.scheme
    }

    /// What comes between `://` and the next `/`.
    pub fn authority(&self) -> &str {
        &self.authority
    }

    /// What comes after the authority's `/`, up to `?`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The options not taken yet.
    pub fn options(&self) -> &BTreeMap<String, String> {
        &self.options
    }

    /// Takes option `key`.
    pub fn take(&mut self, key: &str) -> Option<String> {
        self.options.remove(key)
    }

    /// Takes every option whose key starts with `prefix`, the prefix cut
    /// off (`property.linger.ms` → `linger.ms`).
    pub fn take_prefixed(&mut self, prefix: &str) -> BTreeMap<String, String> {
        let keys: Vec<String> = self
            .options
            .keys()
            .filter(|key| key.starts_with(prefix) && key.len() > prefix.len())
            .cloned()
            .collect();
        keys.into_iter()
            .filter_map(|key| {
                let value = self.options.remove(&key)?;
                Some((key[prefix.len()..].to_owned(), value))
            })
            .collect()
    }

    /// Fails naming the options nobody took, and the ones `known`.
    pub fn finish(&self, known: &[&str]) -> Result<(), String> {
        if self.options.is_empty() {
            return Ok(());
        }
        let left: Vec<&str> = self.options.keys().map(String::as_str).collect();
        Err(format!(
            "unknown option(s) {}; known: {}",
            left.join(", "),
            known.join(", ")
        ))
    }
}

/// `%XX` escapes decoded.
fn decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|hex| std::str::from_utf8(hex).ok())
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                // The text may be a secret's value: it is not repeated.
                .ok_or_else(|| "a % that is not followed by two hex digits".to_owned())?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out)
        .map_err(|_| "a %-escape that decodes to bytes that are not UTF-8".to_owned())
}

/// What a job says about the input it reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputUse {
    /// Whether the job needs its input to end (e.g. it counts at the end):
    /// the connector's default for a read that may be unbounded.
    pub bounded_by_default: bool,
}

/// Sources and sinks of text lines behind one URL scheme.
pub trait Connector: Send + Sync + 'static {
    /// The scheme (`kafka`).
    fn scheme(&self) -> &'static str;

    /// A source of the lines at `endpoint` for job `job`: takes the
    /// options it knows, and fails with a message naming what is wrong.
    fn lines_source(
        &self,
        endpoint: &mut Endpoint,
        job: &str,
        input: InputUse,
    ) -> Result<Box<dyn Source<String>>, String>;

    /// A sink writing lines to `endpoint` for job `job`, as
    /// [`lines_source`](Self::lines_source).
    fn lines_sink(
        &self,
        endpoint: &mut Endpoint,
        job: &str,
    ) -> Result<Box<dyn Sink<String>>, String>;
}

/// Connectors by scheme. Cloning is cheap.
#[derive(Clone, Default)]
pub struct Connectors {
    by_scheme: BTreeMap<&'static str, Arc<dyn Connector>>,
}

impl std::fmt::Debug for Connectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.by_scheme.keys()).finish()
    }
}

/// Where a job's `input` or `output` points.
pub enum Target<T> {
    /// A path (`file://` cut off).
    Path(String),
    /// What a connector made of it.
    Connected(T),
}

impl Connectors {
    /// No connectors: only paths.
    pub const fn none() -> Connectors {
        Connectors {
            by_scheme: BTreeMap::new(),
        }
    }

    /// Adds `connector`; a second one for a scheme replaces the first.
    pub fn add(&mut self, connector: impl Connector) {
        self.by_scheme
            .insert(connector.scheme(), Arc::new(connector));
    }

    /// The schemes there are connectors for.
    pub fn schemes(&self) -> Vec<&'static str> {
        self.by_scheme.keys().copied().collect()
    }

    /// What `text` (a job's input) points at: a path, or a connector's
    /// source of lines.
    pub fn lines_source(
        &self,
        text: &str,
        job: &str,
        input: InputUse,
    ) -> Result<Target<Box<dyn Source<String>>>, String> {
        self.resolve(text, |connector, endpoint| {
            connector.lines_source(endpoint, job, input)
        })
    }

    /// What `text` (a job's output) points at: a path, or a connector's
    /// sink of lines.
    pub fn lines_sink(
        &self,
        text: &str,
        job: &str,
    ) -> Result<Target<Box<dyn Sink<String>>>, String> {
        self.resolve(text, |connector, endpoint| {
            connector.lines_sink(endpoint, job)
        })
    }

    fn resolve<T>(
        &self,
        text: &str,
        make: impl FnOnce(&dyn Connector, &mut Endpoint) -> Result<T, String>,
    ) -> Result<Target<T>, String> {
        let Some(parsed) = Endpoint::parse(text) else {
            return Ok(Target::Path(text.to_owned()));
        };
        let mut endpoint = parsed?;
        if endpoint.scheme() == "file" {
            return Ok(Target::Path(format!("/{}", endpoint.path())));
        }
        let connector = self.by_scheme.get(endpoint.scheme()).ok_or_else(|| {
            let mut known = vec!["a path", "file://"];
            let schemes: Vec<String> = self.schemes().iter().map(|s| format!("{s}://")).collect();
            known.extend(schemes.iter().map(String::as_str));
            format!(
                "no connector for {}:// in this binary (it takes {})",
                endpoint.scheme(),
                known.join(", ")
            )
        })?;
        make(connector.as_ref(), &mut endpoint).map(Target::Connected)
    }
}

/// A boxed source is a source (what a connector returns).
impl<T: 'static> Source<T> for Box<dyn Source<T>> {
    fn open(
        &self,
        ctx: &crate::OperatorContext,
        from: &[crate::source::SourcePosition],
    ) -> Result<Box<dyn crate::source::SourceReader<T>>, holdfast_executor::TaskFailure> {
        self.as_ref().open(ctx, from)
    }
}

/// A boxed sink is a sink (what a connector returns).
impl<T: 'static> Sink<T> for Box<dyn Sink<T>> {
    fn open(
        &self,
        ctx: &crate::OperatorContext,
    ) -> Result<Box<dyn crate::sink::SinkWriter<T>>, holdfast_executor::TaskFailure> {
        self.as_ref().open(ctx)
    }

    fn check(&self, checkpointing: crate::sink::Checkpointing<'_>) -> Result<(), String> {
        self.as_ref().check(checkpointing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_has_its_parts_and_options_decoded() {
        let endpoint = Endpoint::parse(
            "kafka://b1:9092,b2:9092/counts?delivery=exactly-once&property.client.id=a%26b",
        )
        .expect("a URL")
        .expect("valid");
        assert_eq!(endpoint.scheme(), "kafka");
        assert_eq!(endpoint.authority(), "b1:9092,b2:9092");
        assert_eq!(endpoint.path(), "counts");
        let mut endpoint = endpoint;
        assert_eq!(endpoint.take("delivery").as_deref(), Some("exactly-once"));
        assert_eq!(
            endpoint.take_prefixed("property."),
            BTreeMap::from([("client.id".to_owned(), "a&b".to_owned())])
        );
        assert_eq!(endpoint.finish(&[]), Ok(()));
    }

    #[test]
    fn paths_are_not_endpoints_and_bad_queries_are_named() {
        assert!(Endpoint::parse("/data/in.txt").is_none());
        assert!(Endpoint::parse("relative/dir").is_none());
        let twice = Endpoint::parse("kafka://b/t?a=1&a=2").unwrap().unwrap_err();
        assert!(twice.contains("\"a\" is given twice"), "{twice}");
        let bare = Endpoint::parse("kafka://b/t?bounded").unwrap().unwrap_err();
        assert!(bare.contains("no value"), "{bare}");
        let escape = Endpoint::parse("kafka://b/t%zz").unwrap().unwrap_err();
        assert!(escape.contains("two hex digits"), "{escape}");
        let mut left = Endpoint::parse("kafka://b/t?bounde=true").unwrap().unwrap();
        assert_eq!(left.take("bounded"), None);
        let error = left.finish(&["bounded"]).unwrap_err();
        assert_eq!(error, "unknown option(s) bounde; known: bounded");
    }

    #[test]
    fn secrets_never_show_in_errors_or_debug() {
        let text = "kafka://b:1/t?property.sasl.password=hunter2&group=g&property.sasl.oauthbearer.client.secret=s3";
        assert_eq!(
            redacted(text),
            "kafka://b:1/t?property.sasl.password=***&group=g&property.sasl.oauthbearer.client.secret=***"
        );
        let endpoint = Endpoint::parse(text).unwrap().unwrap();
        let debug = format!("{endpoint:?}");
        assert!(
            !debug.contains("hunter2") && !debug.contains("s3"),
            "{debug}"
        );
        let escape = Endpoint::parse("kafka://b/t?property.sasl.password=hunter%2")
            .unwrap()
            .unwrap_err();
        assert!(!escape.contains("hunter"), "{escape}");
    }

    #[test]
    fn an_unknown_scheme_is_refused_naming_what_this_binary_takes() {
        let connectors = Connectors::none();
        let error = connectors
            .lines_sink("kafka://b:9092/t", "j")
            .err()
            .expect("refused");
        assert_eq!(
            error,
            "no connector for kafka:// in this binary (it takes a path, file://)"
        );
        assert!(matches!(
            connectors.lines_sink("file:///tmp/out", "j"),
            Ok(Target::Path(path)) if path == "/tmp/out"
        ));
        assert!(matches!(
            connectors.lines_sink("out", "j"),
            Ok(Target::Path(path)) if path == "out"
        ));
    }
}
