//! Curator-compatible latch node names: `_c_<uuid>-latch-<10-digit seq>`.
//!
//! The `_c_<uuid>-` prefix is Curator's "protected" mode: a contender whose
//! create request was cut off can find the node it may have created by its
//! prefix instead of creating a second one.

/// The name prefix a contender creates its sequential node with.
pub fn latch_prefix(protect_id: &str) -> String {
    format!("_c_{protect_id}-latch-")
}

/// The sequence number of a latch node name, if it is one.
pub fn sequence(name: &str) -> Option<u64> {
    let (_, digits) = name.rsplit_once("latch-")?;
    if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The latch nodes among `children`, lowest sequence first. Names that are
/// not latch nodes are left out (other clients may create anything).
pub fn sorted_latch_nodes(children: &[String]) -> Vec<String> {
    let mut nodes: Vec<(u64, &String)> = children
        .iter()
        .filter_map(|name| sequence(name).map(|seq| (seq, name)))
        .collect();
    nodes.sort();
    nodes.into_iter().map(|(_, name)| name.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_by_sequence_whatever_the_prefix() {
        let children = vec![
            "_c_bbb-latch-0000000003".to_owned(),
            "garbage".to_owned(),
            "_c_aaa-latch-0000000010".to_owned(),
            "_c_ccc-latch-0000000001".to_owned(),
            "latch-".to_owned(),
        ];
        assert_eq!(
            sorted_latch_nodes(&children),
            [
                "_c_ccc-latch-0000000001",
                "_c_bbb-latch-0000000003",
                "_c_aaa-latch-0000000010"
            ]
        );
        assert_eq!(latch_prefix("u1"), "_c_u1-latch-");
        assert_eq!(sequence("_c_u1-latch-0000000042"), Some(42));
        assert_eq!(sequence("_c_u1-latch-00x"), None);
    }
}
