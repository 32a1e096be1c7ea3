//! Messages that name what is wrong with a request without repeating it.
//!
//! serde's errors quote the input they choke on (a string value, an
//! unknown field's name); every wire passes them through here first, so
//! that no answer quotes a value of the request that caused it.

/// Removes values a serde message quotes from the input: `"…"` strings are
/// dropped entirely, the unknown name in "unknown field/variant" is dropped,
/// and other `` `…` `` names (the schema's) are kept when they look like a
/// field or variant name. The trailing " at line … column …" is dropped (the
/// caller adds its own).
pub fn serde_message(msg: &str) -> String {
    /// The words before a `` `…` `` that is a scalar value of the input.
    const VALUE_KINDS: [&str; 6] = [
        "integer ",
        "boolean ",
        "floating point ",
        "character ",
        "string ",
        "bytes ",
    ];
    let msg = msg.split(" at line ").next().unwrap_or(msg);
    // In "unknown field `x`, expected one of …" the first name is the
    // body's; the rest are the schema's.
    let mut hide_next_name = msg.starts_with("unknown field") || msg.starts_with("unknown variant");
    let mut out = String::with_capacity(msg.len());
    let mut chars = msg.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                for d in chars.by_ref() {
                    if d == '"' {
                        break;
                    }
                }
                out.push_str("\"…\"");
            }
            '`' => {
                let mut name = String::new();
                for d in chars.by_ref() {
                    if d == '`' {
                        break;
                    }
                    name.push(d);
                }
                // serde quotes a scalar value of the body the same way
                // ("invalid type: integer `987654321`"): never kept.
                let value = VALUE_KINDS.iter().any(|k| out.ends_with(k))
                    || !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
                let plain = !std::mem::take(&mut hide_next_name)
                    && !value
                    && !name.is_empty()
                    && name.len() <= 40
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                out.push('`');
                out.push_str(if plain { &name } else { "…" });
                out.push('`');
            }
            c => out.push(c),
        }
        if out.len() > 512 {
            out.push('…');
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_unknown_names_are_dropped_schema_names_kept() {
        let m = serde_message(
            "unknown field `MARK`, expected one of `language`, `code` at line 1 column 9",
        );
        assert!(!m.contains("MARK") && m.contains("`language`"), "{m}");
        let m = serde_message("invalid value: string \"MARK\", expected a tier");
        assert!(!m.contains("MARK"), "{m}");
        let m = serde_message("unknown variant `MARK`, expected `python` or `javascript`");
        assert!(!m.contains("MARK") && m.contains("`python`"), "{m}");
    }

    #[test]
    fn scalar_values_are_dropped_too() {
        for (msg, value) in [
            (
                "invalid type: integer `987654321`, expected a string",
                "987654321",
            ),
            ("invalid type: integer `-42`, expected a string", "-42"),
            ("invalid type: boolean `true`, expected a string", "true"),
            ("invalid type: floating point `2.5`, expected u64", "2.5"),
            ("invalid type: character `Q`, expected a string", "`Q`"),
            ("invalid value: integer `70000`, expected u16", "70000"),
        ] {
            let m = serde_message(msg);
            assert!(!m.contains(value), "{msg} -> {m}");
        }
        // The schema's names still come through.
        let m = serde_message("missing field `code`");
        assert!(m.contains("`code`"), "{m}");
    }
}
