//! Shell patterns (`*`, `?`, `[…]`) over bytes, for globbing, `case`,
//! `[[ == ]]`, `${x#pat}`, `find -name` and friends. Matching is iterative
//! (one backtrack point per star), never recursive.

/// A compiled pattern.
#[derive(Debug, Clone)]
pub struct Pattern {
    toks: Vec<Tok>,
}

#[derive(Debug, Clone)]
enum Tok {
    Byte(u8),
    Any,
    Star,
    Class { neg: bool, items: Vec<Item> },
}

#[derive(Debug, Clone)]
enum Item {
    Byte(u8),
    Range(u8, u8),
    Named(fn(u8) -> bool),
}

fn named_class(name: &[u8]) -> Option<fn(u8) -> bool> {
    Some(match name {
        b"alpha" => |c: u8| c.is_ascii_alphabetic(),
        b"digit" => |c: u8| c.is_ascii_digit(),
        b"alnum" => |c: u8| c.is_ascii_alphanumeric(),
        b"upper" => |c: u8| c.is_ascii_uppercase(),
        b"lower" => |c: u8| c.is_ascii_lowercase(),
        b"space" => |c: u8| c.is_ascii_whitespace() || c == 11,
        b"blank" => |c: u8| c == b' ' || c == b'\t',
        b"punct" => |c: u8| c.is_ascii_punctuation(),
        b"print" => |c: u8| (0x20..0x7f).contains(&c),
        b"graph" => |c: u8| c.is_ascii_graphic(),
        b"cntrl" => |c: u8| c.is_ascii_control(),
        b"xdigit" => |c: u8| c.is_ascii_hexdigit(),
        b"word" => |c: u8| c.is_ascii_alphanumeric() || c == b'_',
        _ => return None,
    })
}

/// Whether byte `i` of a pattern is active (unquoted); no mask = all active.
fn on(active: Option<&[bool]>, i: usize) -> bool {
    active.is_none_or(|a| a.get(i).copied().unwrap_or(true))
}

impl Pattern {
    /// Compiles `pat`; bytes whose `active` entry is false are literal. An
    /// active backslash quotes the next byte.
    pub fn new(pat: &[u8], active: Option<&[bool]>) -> Pattern {
        let mut toks = Vec::new();
        let mut i = 0;
        while i < pat.len() {
            let c = pat[i];
            if !on(active, i) {
                toks.push(Tok::Byte(c));
                i += 1;
                continue;
            }
            match c {
                b'*' => {
                    if !matches!(toks.last(), Some(Tok::Star)) {
                        toks.push(Tok::Star);
                    }
                    i += 1;
                }
                b'?' => {
                    toks.push(Tok::Any);
                    i += 1;
                }
                b'\\' if i + 1 < pat.len() => {
                    toks.push(Tok::Byte(pat[i + 1]));
                    i += 2;
                }
                b'[' => match parse_class(pat, i, active) {
                    Some((tok, next)) => {
                        toks.push(tok);
                        i = next;
                    }
                    None => {
                        toks.push(Tok::Byte(b'['));
                        i += 1;
                    }
                },
                _ => {
                    toks.push(Tok::Byte(c));
                    i += 1;
                }
            }
        }
        Pattern { toks }
    }

    /// Whether the pattern has no wildcard (it matches only its own text).
    pub fn is_literal(&self) -> bool {
        self.toks.iter().all(|t| matches!(t, Tok::Byte(_)))
    }

    /// Whether the pattern matches all of `s`.
    pub fn matches(&self, s: &[u8]) -> bool {
        let toks = &self.toks;
        let (mut p, mut i) = (0usize, 0usize);
        let mut star: Option<(usize, usize)> = None;
        while i < s.len() {
            if p < toks.len() {
                if let Tok::Star = toks[p] {
                    star = Some((p, i));
                    p += 1;
                    continue;
                }
                if let Some(n) = match_one(&toks[p], s, i) {
                    p += 1;
                    i += n;
                    continue;
                }
            }
            match star {
                Some((sp, si)) => {
                    let step = char_len(s, si);
                    p = sp + 1;
                    i = si + step;
                    star = Some((sp, si + step));
                }
                None => return false,
            }
        }
        toks[p..].iter().all(|t| matches!(t, Tok::Star))
    }

    /// The length of the shortest (or longest) prefix of `s` it matches.
    /// One pass over `s` (see [`Pattern::run`]), not one match per length.
    pub fn match_prefix(&self, s: &[u8], longest: bool) -> Option<usize> {
        let mut found = None;
        self.run(s, false, |end, _| {
            found = Some(end);
            longest
        });
        found
    }

    /// The start of the shortest (or longest) suffix of `s` it matches.
    pub fn match_suffix(&self, s: &[u8], longest: bool) -> Option<usize> {
        let mut found = None;
        self.run(s, true, |end, (first, last)| {
            if end == s.len() {
                found = Some(if longest { first } else { last });
            }
            true
        });
        found
    }

    /// Runs the pattern over `s` as an automaton (a state is a token
    /// index; a star loops on itself), in time proportional to `s` times
    /// the live states. Matches start at 0, or at every byte when
    /// `anywhere`; each state carries the first and last start that
    /// reaches it. `at_end(end, starts)` is called for every `end` where
    /// the whole pattern has matched; it returns whether to go on.
    fn run(&self, s: &[u8], anywhere: bool, mut at_end: impl FnMut(usize, (usize, usize)) -> bool) {
        let m = self.toks.len();
        // Positions i..i+4 (a character is at most 4 bytes).
        let mut slots: Vec<Slot> = (0..5).map(|_| Slot::new(m + 1)).collect();
        if !anywhere {
            self.add(&mut slots[0], 0, (0, 0));
        }
        for i in 0..=s.len() {
            let cur = i % 5;
            if anywhere {
                self.add(&mut slots[cur], 0, (i, i));
            }
            let slot = std::mem::replace(&mut slots[cur], Slot::new(0));
            if let Some(starts) = slot.get(m)
                && !at_end(i, starts)
            {
                return;
            }
            if i == s.len() || (slot.live.is_empty() && !anywhere) {
                return;
            }
            for &p in &slot.live {
                let Some(starts) = slot.get(p) else {
                    continue;
                };
                match self.toks.get(p) {
                    Some(Tok::Star) => {
                        let n = char_len(s, i);
                        self.add(&mut slots[(i + n) % 5], p, starts);
                    }
                    Some(t) => {
                        if let Some(n) = match_one(t, s, i) {
                            self.add(&mut slots[(i + n) % 5], p + 1, starts);
                        }
                    }
                    None => {}
                }
            }
            let mut slot = slot;
            slot.clear();
            slots[cur] = slot;
        }
    }

    /// Adds state `p` (and, through a star, the state after it).
    fn add(&self, slot: &mut Slot, p: usize, starts: (usize, usize)) {
        slot.merge(p, starts);
        if matches!(self.toks.get(p), Some(Tok::Star)) {
            slot.merge(p + 1, starts);
        }
    }
}

/// The live states at one position: a table by state for short patterns,
/// a map for long ones (a pattern may be a 16 MiB variable).
struct Slot {
    dense: Vec<Option<(usize, usize)>>,
    sparse: std::collections::HashMap<usize, (usize, usize)>,
    live: Vec<usize>,
}

impl Slot {
    fn new(n: usize) -> Self {
        Slot {
            dense: if n <= 4096 { vec![None; n] } else { Vec::new() },
            sparse: Default::default(),
            live: Vec::new(),
        }
    }

    fn get(&self, p: usize) -> Option<(usize, usize)> {
        if self.dense.is_empty() {
            self.sparse.get(&p).copied()
        } else {
            self.dense.get(p).copied().flatten()
        }
    }

    fn merge(&mut self, p: usize, (first, last): (usize, usize)) {
        let cell = if self.dense.is_empty() {
            self.sparse.get(&p).copied()
        } else {
            self.dense.get(p).copied().flatten()
        };
        let v = match cell {
            None => {
                self.live.push(p);
                (first, last)
            }
            Some((a, b)) => (a.min(first), b.max(last)),
        };
        if self.dense.is_empty() {
            self.sparse.insert(p, v);
        } else if let Some(c) = self.dense.get_mut(p) {
            *c = Some(v);
        }
    }

    fn clear(&mut self) {
        for &p in &self.live {
            if let Some(c) = self.dense.get_mut(p) {
                *c = None;
            }
        }
        self.sparse.clear();
        self.live.clear();
    }
}

/// Whether `pat` has an active wildcard byte.
pub fn has_magic(pat: &[u8], active: Option<&[bool]>) -> bool {
    pat.iter()
        .enumerate()
        .any(|(i, &c)| on(active, i) && matches!(c, b'*' | b'?' | b'['))
}

/// Bytes of the UTF-8 character at `i` (1 for invalid sequences).
fn char_len(s: &[u8], i: usize) -> usize {
    let c = s[i];
    let n = match c {
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => 1,
    };
    if n > 1 && i + n <= s.len() && std::str::from_utf8(&s[i..i + n]).is_ok() {
        n
    } else {
        1
    }
}

fn match_one(t: &Tok, s: &[u8], i: usize) -> Option<usize> {
    let c = s[i];
    match t {
        Tok::Byte(b) => (*b == c).then_some(1),
        Tok::Any => Some(char_len(s, i)),
        Tok::Class { neg, items } => {
            let hit = items.iter().any(|it| match it {
                Item::Byte(b) => *b == c,
                Item::Range(a, b) => (*a..=*b).contains(&c),
                Item::Named(f) => f(c),
            });
            if hit != *neg {
                Some(if *neg { char_len(s, i) } else { 1 })
            } else {
                None
            }
        }
        Tok::Star => None,
    }
}

/// Parses `[…]` starting at `pat[start] == '['`; `None` if it is not
/// closed (then `[` is literal).
fn parse_class(pat: &[u8], start: usize, active: Option<&[bool]>) -> Option<(Tok, usize)> {
    let mut i = start + 1;
    let mut neg = false;
    if i < pat.len() && on(active, i) && (pat[i] == b'!' || pat[i] == b'^') {
        neg = true;
        i += 1;
    }
    let mut items = Vec::new();
    let mut first = true;
    while i < pat.len() {
        let c = pat[i];
        if c == b']' && !first && on(active, i) {
            return Some((Tok::Class { neg, items }, i + 1));
        }
        first = false;
        if c == b'[' && on(active, i) && pat.get(i + 1) == Some(&b':') {
            let rest = &pat[i + 2..];
            if let Some(end) = rest.windows(2).position(|w| w == b":]")
                && let Some(f) = named_class(&rest[..end])
            {
                items.push(Item::Named(f));
                i += 2 + end + 2;
                continue;
            }
        }
        let (lo, used) = if c == b'\\' && on(active, i) && i + 1 < pat.len() {
            (pat[i + 1], 2)
        } else {
            (c, 1)
        };
        i += used;
        if i + 1 < pat.len() && pat[i] == b'-' && pat[i + 1] != b']' {
            let hi = pat[i + 1];
            items.push(Item::Range(lo, hi));
            i += 2;
        } else {
            items.push(Item::Byte(lo));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, s: &str) -> bool {
        Pattern::new(p.as_bytes(), None).matches(s.as_bytes())
    }

    #[test]
    fn wildcards() {
        assert!(m("*.txt", "a.txt"));
        assert!(!m("*.txt", "a.txt.bak"));
        assert!(m("a?c", "abc"));
        assert!(m("[a-c]x", "bx"));
        assert!(!m("[!a-c]x", "bx"));
        assert!(m("[[:digit:]]*", "1abc"));
        assert!(m("*a*b*", "xxaYYbZZ"));
        assert!(m("\\*", "*"));
        assert!(!m("\\*", "a"));
        assert!(m("./*", "./x/y"));
        assert!(m("é?", "éü"));
        assert!(m("[]]", "]"));
        assert!(m("[", "["));
    }

    #[test]
    fn quoted_bytes_are_literal() {
        let p = Pattern::new(b"*x", Some(&[false, true]));
        assert!(p.matches(b"*x"));
        assert!(!p.matches(b"ax"));
    }

    #[test]
    fn prefixes_and_suffixes() {
        let p = Pattern::new(b"*.", None);
        assert_eq!(p.match_prefix(b"a.b.c", false), Some(2));
        assert_eq!(p.match_prefix(b"a.b.c", true), Some(4));
        let q = Pattern::new(b".*", None);
        assert_eq!(q.match_suffix(b"a.b.c", false), Some(3));
        assert_eq!(q.match_suffix(b"a.b.c", true), Some(1));
    }
}
