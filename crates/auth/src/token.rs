//! The auth header, as pure functions: [`sign`] makes one, [`verify`]
//! parses one and checks its signature. No clock, no randomness: the
//! timestamp and nonce come in.
//!
//! ```text
//! x-holdfast-auth: v1.<peer id>.<unix ms>.<nonce: 32 hex>.<hmac: 64 hex>
//! hmac = HMAC-SHA256(key = cluster secret,
//!                    "holdfast-rpc-auth" 0 "v1" 0 peer 0 unix-ms 0 nonce-hex)
//! ```
//!
//! The peer id may contain `.`, the other parts cannot, so the header is
//! split from the right. The MAC covers the parts exactly as sent.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::peer::{MAX_PEER_ID_LEN, PeerId};
use crate::rejection::{Malformed, Rejection};
use crate::secret::ClusterSecret;

/// The metadata key that carries the auth header.
pub const AUTH_HEADER: &str = "x-holdfast-auth";
/// The header format's version; the first field of every header.
pub const VERSION: &str = "v1";
/// How many random bytes a nonce has.
pub const NONCE_LEN: usize = 16;

/// Separates this MAC from any other use of the same key.
const DOMAIN: &[u8] = b"holdfast-rpc-auth";
/// No well-formed header is longer: version, a maximal peer id, 20 digits,
/// the nonce, the MAC and four dots.
const MAX_HEADER_LEN: usize =
    VERSION.len() + MAX_PEER_ID_LEN + 20 + 2 * NONCE_LEN + MAC_HEX_LEN + 4;
/// HMAC-SHA256 tags are 32 bytes.
const MAC_LEN: usize = 32;
const MAC_HEX_LEN: usize = 2 * MAC_LEN;

type HmacSha256 = Hmac<Sha256>;

/// A nonce: random bytes that make every signed header unique.
pub type Nonce = [u8; NONCE_LEN];

/// What a header claims, once its signature checked out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    /// The calling process.
    pub peer: PeerId,
    /// When it signed, in milliseconds since the Unix epoch (its wall clock).
    pub unix_ms: u64,
    /// Its random nonce.
    pub nonce: Nonce,
}

/// The header value for `claim`, signed with `secret`.
pub fn sign(secret: &ClusterSecret, claim: &Claim) -> String {
    let unix_ms = claim.unix_ms.to_string();
    let nonce = hex::encode(claim.nonce);
    let tag = mac(secret, claim.peer.as_str(), &unix_ms, &nonce)
        .finalize()
        .into_bytes();
    format!(
        "{VERSION}.{}.{unix_ms}.{nonce}.{}",
        claim.peer,
        hex::encode(tag)
    )
}

/// Parses `header` and checks its signature with `secret` (in constant
/// time). Says which part is wrong, never anything about the secret. Does
/// not judge the timestamp or the nonce: that is the
/// [`Verifier`](crate::Verifier)'s job.
pub fn verify(secret: &ClusterSecret, header: &[u8]) -> Result<Claim, Rejection> {
    if header.len() > MAX_HEADER_LEN {
        return Err(Rejection::Malformed(Malformed::TooLong));
    }
    let header = std::str::from_utf8(header)
        .ok()
        .filter(|h| h.is_ascii())
        .ok_or(Rejection::Malformed(Malformed::NotAscii))?;
    let rest = header
        .strip_prefix(VERSION)
        .and_then(|rest| rest.strip_prefix('.'))
        .ok_or(Rejection::Malformed(Malformed::Version))?;
    let mut parts = rest.rsplitn(4, '.');
    let (Some(tag), Some(nonce), Some(unix_ms), Some(peer)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Rejection::Malformed(Malformed::Shape));
    };
    let peer = PeerId::new(peer).map_err(|_| Rejection::Malformed(Malformed::PeerId))?;
    let claimed_ms = parse_decimal(unix_ms).ok_or(Rejection::Malformed(Malformed::Timestamp))?;
    let nonce_bytes =
        decode_hex::<NONCE_LEN>(nonce).ok_or(Rejection::Malformed(Malformed::Nonce))?;
    let tag = decode_hex::<MAC_LEN>(tag).ok_or(Rejection::Malformed(Malformed::Signature))?;
    mac(secret, peer.as_str(), unix_ms, nonce)
        .verify_slice(&tag)
        .map_err(|_| Rejection::BadSignature)?;
    Ok(Claim {
        peer,
        unix_ms: claimed_ms,
        nonce: nonce_bytes,
    })
}

fn mac(secret: &ClusterSecret, peer: &str, unix_ms: &str, nonce_hex: &str) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(secret.key()).expect("HMAC accepts any key length");
    mac.update(DOMAIN);
    // No part can contain a NUL byte, so the separator keeps them apart.
    for part in [VERSION, peer, unix_ms, nonce_hex] {
        mac.update(&[0]);
        mac.update(part.as_bytes());
    }
    mac
}

/// A plain decimal `u64`: digits only, no sign, no leading zero.
fn parse_decimal(s: &str) -> Option<u64> {
    let canonical =
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'));
    canonical.then(|| s.parse().ok()).flatten()
}

/// Exactly `N` bytes as `2 * N` lowercase hex digits.
fn decode_hex<const N: usize>(s: &str) -> Option<[u8; N]> {
    if s.len() != 2 * N || s.bytes().any(|b| b.is_ascii_uppercase()) {
        return None;
    }
    let mut out = [0u8; N];
    hex::decode_to_slice(s, &mut out).ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn secret() -> ClusterSecret {
        ClusterSecret::from_bytes(&b"0123456789abcdef-cluster"[..]).unwrap()
    }

    fn claim(peer: &str) -> Claim {
        Claim {
            peer: PeerId::new(peer).unwrap(),
            unix_ms: 1_700_000_000_123,
            nonce: [0xab; NONCE_LEN],
        }
    }

    #[test]
    fn a_signed_header_verifies_and_has_the_documented_shape() {
        let header = sign(&secret(), &claim("tm.host-1"));
        let parts: Vec<_> = header.split('.').collect();
        assert_eq!(parts[0], "v1");
        assert_eq!(&parts[1..3], ["tm", "host-1"]);
        assert_eq!(parts[3], "1700000000123");
        assert_eq!(parts[4], "ab".repeat(NONCE_LEN));
        assert_eq!(parts[5].len(), MAC_HEX_LEN);
        assert_eq!(verify(&secret(), header.as_bytes()), Ok(claim("tm.host-1")));
    }

    #[test]
    fn another_secret_is_a_bad_signature() {
        let header = sign(&secret(), &claim("tm-1"));
        let other = ClusterSecret::from_bytes(&b"0123456789abcdef-other"[..]).unwrap();
        assert_eq!(
            verify(&other, header.as_bytes()),
            Err(Rejection::BadSignature)
        );
    }

    #[test]
    fn malformed_headers_say_which_part_is_wrong() {
        let good = sign(&secret(), &claim("tm-1"));
        let tag = good.rsplit('.').next().unwrap();
        let nonce = "ab".repeat(NONCE_LEN);
        let cases: &[(String, Malformed)] = &[
            ("v2.tm-1.1.x.y".into(), Malformed::Version),
            ("v1".into(), Malformed::Version),
            ("v1.tm-1.1".into(), Malformed::Shape),
            (format!("v1..1.{nonce}.{tag}"), Malformed::PeerId),
            (format!("v1.tm 1.1.{nonce}.{tag}"), Malformed::PeerId),
            (format!("v1.tm-1.01.{nonce}.{tag}"), Malformed::Timestamp),
            (format!("v1.tm-1.-1.{nonce}.{tag}"), Malformed::Timestamp),
            (
                format!("v1.tm-1.99999999999999999999.{nonce}.{tag}"),
                Malformed::Timestamp,
            ),
            (
                format!("v1.tm-1.1.{}.{tag}", "AB".repeat(NONCE_LEN)),
                Malformed::Nonce,
            ),
            (format!("v1.tm-1.1.abc.{tag}"), Malformed::Nonce),
            (
                format!("v1.tm-1.1.{nonce}.{}", &tag[1..]),
                Malformed::Signature,
            ),
            ("v1.tm-1.1.é.x".into(), Malformed::NotAscii),
            (
                "v1.".to_string() + &"a".repeat(MAX_HEADER_LEN),
                Malformed::TooLong,
            ),
        ];
        for (header, part) in cases {
            assert_eq!(
                verify(&secret(), header.as_bytes()),
                Err(Rejection::Malformed(*part)),
                "{header}"
            );
        }
    }

    proptest! {
        #[test]
        fn signed_claims_round_trip(
            peer in "[A-Za-z0-9._-]{1,128}",
            unix_ms in any::<u64>(),
            nonce in any::<[u8; NONCE_LEN]>(),
        ) {
            let claim = Claim { peer: PeerId::new(peer).unwrap(), unix_ms, nonce };
            let header = sign(&secret(), &claim);
            prop_assert!(header.len() <= MAX_HEADER_LEN);
            prop_assert_eq!(verify(&secret(), header.as_bytes()), Ok(claim));
        }

        #[test]
        fn any_tampered_byte_fails(position in any::<prop::sample::Index>(), replacement in any::<u8>()) {
            let header = sign(&secret(), &claim("tm.host-1"));
            let mut bytes = header.into_bytes();
            let i = position.index(bytes.len());
            prop_assume!(bytes[i] != replacement);
            bytes[i] = replacement;
            prop_assert!(verify(&secret(), &bytes).is_err());
        }

        #[test]
        fn arbitrary_input_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
            let _ = verify(&secret(), &bytes);
        }
    }
}
