// The oracle for canonical request paths, shared by `tests/properties.rs`
// and the `route_template` fuzz target (`include!`d by both): written
// independently of `host/src/grant/route.rs`, from what servers and
// proxies are known to do to a path.

/// What a lenient server could make of a segment: `;params` dropped, one
/// more percent-decoding, whitespace and trailing dots trimmed, full-width
/// and other look-alikes of `.`, `/`, `\` mapped to them. `None` when the
/// decoding is not UTF-8 (an overlong `..` among them).
fn server_view(seg: &str) -> Option<String> {
    let base = seg.split(';').next().unwrap_or("");
    let mut bytes = Vec::new();
    let b = base.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let hex = |x: u8| (x as char).to_digit(16);
        match (b[i], b.get(i + 1).and_then(|x| hex(*x)), b.get(i + 2).and_then(|x| hex(*x))) {
            (b'%', Some(h), Some(l)) => {
                bytes.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                bytes.push(c);
                i += 1;
            }
        }
    }
    let text = String::from_utf8(bytes).ok()?;
    // Decoded first, parameters dropped after (`..%3b`).
    let text = text.split(';').next().unwrap_or("").to_owned();
    let mapped: String = text
        .chars()
        .map(|c| match c {
            '\u{ff0e}' | '\u{fe52}' | '\u{2024}' => '.',
            '\u{ff0f}' | '\u{2215}' | '\u{2044}' => '/',
            '\u{ff3c}' | '\u{29f5}' | '\u{fe68}' => '\\',
            c => c,
        })
        .collect();
    Some(
        mapped
            .trim()
            .trim_end_matches(|c: char| c == '.' || c.is_whitespace())
            .to_owned(),
    )
}

/// A segment no server normalises into `.`, `..`, nothing or a separator.
fn survives_normalisation(seg: &str) -> bool {
    server_view(seg).is_some_and(|v| !v.is_empty() && v != "." && v != ".." && !v.contains(['/', '\\']))
}

fn is_canonical_path(path: &str) -> bool {
    let Some(rest) = path.strip_prefix('/') else {
        return false;
    };
    let lower = path.to_ascii_lowercase();
    rest.split('/')
        .all(|seg| !seg.is_empty() && seg != "." && seg != ".." && !seg.contains(';') && survives_normalisation(seg))
        && !lower.contains("%2e")
        && !lower.contains("%2f")
        && !lower.contains("%5c")
        && !lower.contains("%25")
        && !path.contains('\\')
        && !path.contains('#')
        && path.bytes().all(|b| (0x21..0x7f).contains(&b))
}
