//! A failure in the one shape Flink's REST client can read it in: Flink's
//! `SerializedThrowable`, written in Java's object serialization format
//! (the Java Object Serialization Specification, chapter 6).
//!
//! Flink 2.3's client reads a failed savepoint's `failure-cause` only from
//! its `serialized-throwable` field: the Base64 of a serialized
//! `org.apache.flink.util.SerializedThrowable`. Without it the `flink` CLI
//! cannot parse the answer and, instead of saying why the savepoint
//! failed, waits until it times out. So holdfast writes that one object:
//! a `SerializedThrowable` whose message and stringified stack trace are
//! holdfast's reason, with no cause, no stack frames, no suppressed
//! exceptions and no serialized original (Flink then shows the
//! `SerializedThrowable` itself). Only the serial version ids and field
//! lists of the three classes involved are needed; they are checked against
//! the real classes by the contract test (`FlinkContract.java` parses every
//! answer with Flink's own deserializer).

use base64::Engine;

/// `TC_NULL`, `TC_CLASSDESC`, `TC_OBJECT`, `TC_STRING`, `TC_LONGSTRING`,
/// `TC_ENDBLOCKDATA` of the specification.
const TC_NULL: u8 = 0x70;
const TC_CLASSDESC: u8 = 0x72;
const TC_OBJECT: u8 = 0x73;
const TC_STRING: u8 = 0x74;
const TC_ENDBLOCKDATA: u8 = 0x78;
const TC_LONGSTRING: u8 = 0x7C;
/// The class is serializable; it has a `writeObject` method.
const SC_SERIALIZABLE: u8 = 0x02;
const SC_WRITE_METHOD: u8 = 0x01;

/// The serial version ids of the classes written (from their `.class`
/// files: `serialver` prints them).
const SERIALIZED_THROWABLE_UID: i64 = 7_284_183_123_441_947_635;
const EXCEPTION_UID: i64 = -3_387_516_993_124_229_948;
const THROWABLE_UID: i64 = -3_042_686_055_658_047_285;

/// A serialized `SerializedThrowable` standing for a failure of class
/// `class` (shown as the original exception's class) with `message`, as
/// Base64 (the form of the `serialized-throwable` field).
pub fn serialized_throwable(class: &str, message: &str) -> String {
    let mut out = Stream::default();
    out.bytes(&[0xAC, 0xED, 0x00, 0x05]);
    out.byte(TC_OBJECT);
    // SerializedThrowable: three object fields, sorted by name.
    out.class_desc(
        "org.apache.flink.util.SerializedThrowable",
        SERIALIZED_THROWABLE_UID,
        SC_SERIALIZABLE,
        &[
            ("fullStringifiedStackTrace", "Ljava/lang/String;"),
            ("originalErrorClassName", "Ljava/lang/String;"),
            ("serializedException", "[B"),
        ],
    );
    out.class_desc("java.lang.Exception", EXCEPTION_UID, SC_SERIALIZABLE, &[]);
    out.class_desc(
        "java.lang.Throwable",
        THROWABLE_UID,
        SC_SERIALIZABLE | SC_WRITE_METHOD,
        &[
            ("cause", "Ljava/lang/Throwable;"),
            ("detailMessage", "Ljava/lang/String;"),
            ("stackTrace", "[Ljava/lang/StackTraceElement;"),
            ("suppressedExceptions", "Ljava/util/List;"),
        ],
    );
    out.byte(TC_NULL); // Throwable has no serializable superclass.
    // The values, superclass first: Throwable's fields, then the end of
    // what its writeObject wrote; Exception has none; SerializedThrowable's.
    out.byte(TC_NULL); // cause
    out.string(message); // detailMessage
    out.byte(TC_NULL); // stackTrace
    out.byte(TC_NULL); // suppressedExceptions
    out.byte(TC_ENDBLOCKDATA);
    out.string(&stringified(class, message)); // fullStringifiedStackTrace
    out.string(class); // originalErrorClassName
    out.byte(TC_NULL); // serializedException
    base64::engine::general_purpose::STANDARD.encode(out.0)
}

/// A failure as Java prints one without frames: `CLASS: MESSAGE` and a
/// line end (what Flink's `stack-trace` field holds).
pub fn stringified(class: &str, message: &str) -> String {
    format!("{class}: {message}\n")
}

/// The bytes written so far.
#[derive(Default)]
struct Stream(Vec<u8>);

impl Stream {
    fn byte(&mut self, b: u8) {
        self.0.push(b);
    }

    fn bytes(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }

    /// A class descriptor without its superclass (which follows it):
    /// name, serial version id, flags, fields, no annotation.
    fn class_desc(&mut self, name: &str, uid: i64, flags: u8, fields: &[(&str, &str)]) {
        self.byte(TC_CLASSDESC);
        self.utf(name);
        self.bytes(&uid.to_be_bytes());
        self.byte(flags);
        self.bytes(&(fields.len() as u16).to_be_bytes());
        for (field, signature) in fields {
            // The type code is the signature's first character; an object
            // or array field names its type as a string object.
            self.byte(signature.as_bytes()[0]);
            self.utf(field);
            self.string(signature);
        }
        self.byte(TC_ENDBLOCKDATA);
    }

    /// A new string object.
    fn string(&mut self, text: &str) {
        let encoded = modified_utf8(text);
        match u16::try_from(encoded.len()) {
            Ok(len) => {
                self.byte(TC_STRING);
                self.bytes(&len.to_be_bytes());
            }
            Err(_) => {
                self.byte(TC_LONGSTRING);
                self.bytes(&(encoded.len() as u64).to_be_bytes());
            }
        }
        self.bytes(&encoded);
    }

    /// A name in the stream's short form (at most 65,535 bytes; class and
    /// field names here are short).
    fn utf(&mut self, text: &str) {
        let encoded = modified_utf8(text);
        let len = u16::try_from(encoded.len()).unwrap_or(u16::MAX);
        self.bytes(&len.to_be_bytes());
        self.bytes(&encoded[..usize::from(len)]);
    }
}

/// Java's modified UTF-8: NUL as two bytes, characters beyond the Basic
/// Multilingual Plane as their two UTF-16 surrogates of three bytes each.
fn modified_utf8(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    for unit in text.encode_utf16() {
        match unit {
            0x0001..=0x007F => out.push(unit as u8),
            0x0000 | 0x0080..=0x07FF => {
                out.push(0xC0 | (unit >> 6) as u8);
                out.push(0x80 | (unit & 0x3F) as u8);
            }
            _ => {
                out.push(0xE0 | (unit >> 12) as u8);
                out.push(0x80 | ((unit >> 6) & 0x3F) as u8);
                out.push(0x80 | (unit & 0x3F) as u8);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modified_utf8_encodes_nul_and_supplementary_characters_as_java_does() {
        assert_eq!(modified_utf8("a"), b"a");
        assert_eq!(modified_utf8("\0"), [0xC0, 0x80]);
        assert_eq!(modified_utf8("é"), "é".as_bytes());
        assert_eq!(modified_utf8("€"), "€".as_bytes());
        // U+1F600 is the surrogates D83D DE00, three bytes each.
        assert_eq!(modified_utf8("😀"), [0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80]);
    }

    #[test]
    fn the_stream_starts_with_the_magic_and_holds_the_message() {
        let encoded = serialized_throwable("holdfast.SavepointFailed", "disk full");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap();
        assert_eq!(bytes[..5], [0xAC, 0xED, 0x00, 0x05, TC_OBJECT]);
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.contains("org.apache.flink.util.SerializedThrowable"));
        assert!(text.contains("disk full"));
        assert!(text.contains("holdfast.SavepointFailed: disk full\n"));
    }

    #[test]
    fn a_long_message_is_a_long_string() {
        let long = "x".repeat(70_000);
        let mut out = Stream::default();
        out.string(&long);
        assert_eq!(out.0[0], TC_LONGSTRING);
        assert_eq!(out.0[1..9], 70_000u64.to_be_bytes());
        assert_eq!(out.0.len(), 9 + 70_000);
    }
}
