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
                let plain = !std::mem::take(&mut hide_next_name)
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
}
