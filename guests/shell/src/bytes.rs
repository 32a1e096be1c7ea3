//! Byte-string helpers shared by the parser, the evaluator and the
//! utilities.

/// Decodes one backslash escape, `src` starting just after the backslash.
/// `ansi` selects `$'…'` rules (`\'`, `\"`, `\?`, `\cX`, `\0nnn` and
/// `\nnn` octal); otherwise `echo -e`/`printf` rules (`\0nnn` octal, `\c`
/// left to the caller). Returns the bytes and how many input bytes were
/// used. An unknown escape yields the backslash and the byte.
pub fn backslash_escape(src: &[u8], ansi: bool) -> (Vec<u8>, usize) {
    let Some(&c) = src.first() else {
        return (b"\\".to_vec(), 0);
    };
    let one = |b: u8| (vec![b], 1);
    match c {
        b'n' => one(b'\n'),
        b't' => one(b'\t'),
        b'r' => one(b'\r'),
        b'a' => one(7),
        b'b' => one(8),
        b'e' | b'E' => one(27),
        b'f' => one(12),
        b'v' => one(11),
        b'\\' => one(b'\\'),
        b'\'' if ansi => one(b'\''),
        b'"' if ansi => one(b'"'),
        b'?' if ansi => one(b'?'),
        b'c' if ansi => match src.get(1) {
            Some(&x) => (vec![x & 0x1f], 2),
            None => (b"\\c".to_vec(), 1),
        },
        b'x' => {
            let n = hex_digits(&src[1..], 2);
            if n == 0 {
                return (b"\\x".to_vec(), 1);
            }
            let v = parse_radix(&src[1..1 + n], 16) as u8;
            (vec![v], 1 + n)
        }
        b'u' | b'U' => {
            let max = if c == b'u' { 4 } else { 8 };
            let n = hex_digits(&src[1..], max);
            if n == 0 {
                return (vec![b'\\', c], 1);
            }
            let v = parse_radix(&src[1..1 + n], 16);
            let ch = char::from_u32(v as u32).unwrap_or('\u{fffd}');
            let mut buf = [0u8; 4];
            (ch.encode_utf8(&mut buf).as_bytes().to_vec(), 1 + n)
        }
        b'0'..=b'7' => {
            // `\0nnn` (echo/printf) or `\nnn` ($'…').
            let (start, max) = if !ansi && c == b'0' { (1, 3) } else { (0, 3) };
            if !ansi && c != b'0' {
                return (vec![b'\\', c], 1);
            }
            let digits = src[start..]
                .iter()
                .take(max)
                .take_while(|d| (b'0'..=b'7').contains(*d))
                .count();
            let v = parse_radix(&src[start..start + digits], 8) as u8;
            (vec![v], start + digits)
        }
        _ => (vec![b'\\', c], 1),
    }
}

fn hex_digits(s: &[u8], max: usize) -> usize {
    s.iter()
        .take(max)
        .take_while(|c| c.is_ascii_hexdigit())
        .count()
}

fn parse_radix(s: &[u8], radix: u32) -> u64 {
    s.iter().fold(0u64, |acc, &c| {
        acc.wrapping_mul(radix as u64) + (c as char).to_digit(radix).unwrap_or(0) as u64
    })
}

/// Quotes `s` for the shell with single quotes (`'` as `'\''`), as
/// `export -p` prints values.
pub fn single_quote(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 2);
    out.push(b'\'');
    for &c in s {
        if c == b'\'' {
            out.extend_from_slice(b"'\\''");
        } else {
            out.push(c);
        }
    }
    out.push(b'\'');
    out
}

/// Quotes `s` only when it needs it (for `set -x` traces).
pub fn quote_if_needed(s: &[u8]) -> Vec<u8> {
    let plain = !s.is_empty()
        && s.iter()
            .all(|&c| c.is_ascii_alphanumeric() || b"_-./:=+,@%^".contains(&c) || c >= 0x80);
    if plain { s.to_vec() } else { single_quote(s) }
}

/// Parses a decimal integer with optional sign and surrounding blanks.
pub fn parse_int(s: &[u8]) -> Option<i64> {
    let t = trim_blanks(s);
    let text = std::str::from_utf8(t).ok()?;
    let text = text.strip_prefix('+').unwrap_or(text);
    text.parse::<i64>().ok()
}

/// `s` without leading and trailing spaces, tabs and newlines.
pub fn trim_blanks(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &s[start..end.max(start)]
}

/// Splits `s` into lines, each without its `\n` (a final unterminated line
/// counts; a final `\n` does not start an empty line).
pub fn lines(s: &[u8]) -> impl Iterator<Item = &[u8]> {
    let body = s.strip_suffix(b"\n").unwrap_or(s);
    let empty = s.is_empty();
    body.split(|&c| c == b'\n').filter(move |_| !empty)
}

/// Lossy UTF-8 text of `s`.
pub fn lossy(s: &[u8]) -> String {
    String::from_utf8_lossy(s).into_owned()
}

/// Finds `needle` in `hay`.
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
}

/// `s` right-aligned in `width` characters with `fill` (`format!` refuses
/// widths above 65535; these take any width).
pub fn pad_left(s: &str, width: usize, fill: char) -> String {
    let n = width.saturating_sub(s.chars().count());
    let mut out = String::with_capacity(s.len() + n);
    out.extend(std::iter::repeat_n(fill, n));
    out.push_str(s);
    out
}

/// `s` left-aligned in `width` characters.
pub fn pad_right(s: &str, width: usize) -> String {
    let n = width.saturating_sub(s.chars().count());
    let mut out = String::with_capacity(s.len() + n);
    out.push_str(s);
    out.extend(std::iter::repeat_n(' ', n));
    out
}

/// A number's text zero-padded to `width` as `{:0width$}` pads: after the
/// sign.
pub fn zero_pad(s: &str, width: usize) -> String {
    match s.strip_prefix('-') {
        Some(rest) => format!("-{}", pad_left(rest, width.saturating_sub(1), '0')),
        None => pad_left(s, width, '0'),
    }
}
