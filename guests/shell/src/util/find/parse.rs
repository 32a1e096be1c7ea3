//! Parsing `find`'s expression: tests, operators, options and actions.

use crate::exec::Shell;
use crate::pattern::Pattern;
use regex::bytes::Regex;

pub(super) enum Test {
    /// Pattern, case-insensitive.
    Name(Pattern, bool),
    Path(Pattern, bool),
    Regex(Regex),
    Type(u8),
    Size(char, u64, u64),
    Empty,
    Newer(std::time::SystemTime),
    Age(char, i64, i64),
    True,
    False,
}

pub(super) enum Action {
    Print(u8),
    Printf(Vec<u8>),
    Delete,
    Exec(Vec<Vec<u8>>, bool),
    Prune,
    Quit,
}

pub(super) enum E {
    /// `a -a b -a …`, flat (a long chain is not a deep tree).
    And(Vec<E>),
    /// `a -o b -o …`
    Or(Vec<E>),
    Not(Box<E>),
    Test(Test),
    Act(usize),
}

pub(super) struct Parser<'a> {
    pub(super) args: &'a [Vec<u8>],
    pub(super) i: usize,
    pub(super) actions: Vec<Action>,
    pub(super) maxdepth: Option<usize>,
    pub(super) mindepth: usize,
    pub(super) depth: usize,
    /// Tests and actions so far (at most `MAX_EXPR_NODES`).
    pub(super) nodes: usize,
    pub(super) now: i64,
    pub(super) sh: &'a Shell,
}

fn cmp_num(text: &[u8]) -> Option<(char, i64)> {
    let t = String::from_utf8_lossy(text).into_owned();
    let (c, rest) = match t.as_bytes().first() {
        Some(b'+') => ('+', &t[1..]),
        Some(b'-') => ('-', &t[1..]),
        _ => ('=', &t[..]),
    };
    Some((c, rest.parse().ok()?))
}

impl Parser<'_> {
    fn peek(&self) -> Option<&[u8]> {
        self.args.get(self.i).map(|a| a.as_slice())
    }

    fn value(&mut self, what: &str) -> Result<Vec<u8>, String> {
        self.i += 1;
        let v = self
            .args
            .get(self.i)
            .cloned()
            .ok_or_else(|| format!("missing argument to `{what}'"))?;
        self.i += 1;
        Ok(v)
    }

    pub(super) fn or(&mut self) -> Result<E, String> {
        let mut items = vec![self.and()?];
        while matches!(self.peek(), Some(b"-o" | b"-or")) {
            self.i += 1;
            items.push(self.and()?);
        }
        Ok(if items.len() == 1 {
            items.remove(0)
        } else {
            E::Or(items)
        })
    }

    fn and(&mut self) -> Result<E, String> {
        let mut items = vec![self.not()?];
        loop {
            match self.peek() {
                Some(b"-a" | b"-and") => {
                    self.i += 1;
                }
                Some(b"-o" | b"-or" | b")") | None => {
                    return Ok(if items.len() == 1 {
                        items.remove(0)
                    } else {
                        E::And(items)
                    });
                }
                _ => {}
            }
            items.push(self.not()?);
        }
    }

    fn not(&mut self) -> Result<E, String> {
        if matches!(self.peek(), Some(b"!" | b"-not")) {
            self.i += 1;
            self.depth += 1;
            if self.depth > crate::limits::MAX_PARSE_NEST || crate::limits::stack::exhausted() {
                return Err("expression nested too deeply".into());
            }
            let inner = self.not()?;
            self.depth -= 1;
            return Ok(E::Not(Box::new(inner)));
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<E, String> {
        self.nodes += 1;
        if self.nodes > crate::limits::MAX_EXPR_NODES {
            return Err(format!(
                "expression too long (more than {} tests and actions)",
                crate::limits::MAX_EXPR_NODES
            ));
        }
        let Some(a) = self.peek().map(|a| a.to_vec()) else {
            return Err("expected an expression".into());
        };
        let name = String::from_utf8_lossy(&a).into_owned();
        if a == b"(" {
            self.i += 1;
            self.depth += 1;
            if self.depth > crate::limits::MAX_PARSE_NEST || crate::limits::stack::exhausted() {
                return Err("expression nested too deeply".into());
            }
            let e = self.or()?;
            self.depth -= 1;
            if self.peek() != Some(b")") {
                return Err("invalid expression; I was expecting to find a ')' somewhere but did not see one.".into());
            }
            self.i += 1;
            return Ok(e);
        }
        let test = match name.as_str() {
            "-name" | "-iname" => {
                let icase = name == "-iname";
                let v = self.value(&name)?;
                let v = if icase { v.to_ascii_lowercase() } else { v };
                Test::Name(Pattern::new(&v, None), icase)
            }
            "-path" | "-wholename" | "-ipath" | "-iwholename" => {
                let icase = name.starts_with("-i");
                let v = self.value(&name)?;
                let v = if icase { v.to_ascii_lowercase() } else { v };
                Test::Path(Pattern::new(&v, None), icase)
            }
            "-regex" | "-iregex" => {
                let v = self.value(&name)?;
                let t = crate::util::re::translate(&v, true)?;
                let re = crate::util::re::build(&format!("^(?:{t})$"), name == "-iregex")?;
                Test::Regex(re)
            }
            "-type" | "-xtype" => {
                let v = self.value(&name)?;
                match v.first() {
                    Some(&c @ (b'f' | b'd' | b'l' | b'p' | b's' | b'b' | b'c')) => Test::Type(c),
                    _ => {
                        return Err(format!(
                            "Unknown argument to -type: {}",
                            String::from_utf8_lossy(&v)
                        ));
                    }
                }
            }
            "-size" => {
                let v = self.value(&name)?;
                let (num, unit) = match v.last() {
                    Some(&u) if u.is_ascii_alphabetic() => (&v[..v.len() - 1], u),
                    _ => (&v[..], b'b'),
                };
                let mult = match unit {
                    b'c' => 1,
                    b'w' => 2,
                    b'k' => 1024,
                    b'M' => 1 << 20,
                    b'G' => 1 << 30,
                    _ => 512,
                };
                let (c, n) = cmp_num(num).ok_or("invalid -size argument")?;
                Test::Size(c, n.unsigned_abs(), mult)
            }
            "-empty" => {
                self.i += 1;
                Test::Empty
            }
            "-newer" => {
                let v = self.value(&name)?;
                let t = self
                    .sh
                    .fs
                    .host(&self.sh.cwd, &v)
                    .and_then(std::fs::metadata)
                    .and_then(|m| m.modified())
                    .map_err(|_| {
                        format!(
                            "'{}': No such file or directory",
                            String::from_utf8_lossy(&v)
                        )
                    })?;
                Test::Newer(t)
            }
            "-mtime" | "-mmin" | "-atime" | "-amin" | "-ctime" | "-cmin" => {
                let v = self.value(&name)?;
                let (c, n) = cmp_num(&v).ok_or("invalid argument")?;
                Test::Age(c, n, if name.ends_with("min") { 60 } else { 86400 })
            }
            "-true" => {
                self.i += 1;
                Test::True
            }
            "-false" => {
                self.i += 1;
                Test::False
            }
            "-maxdepth" | "-mindepth" => {
                let v = self.value(&name)?;
                let n: usize = String::from_utf8_lossy(&v)
                    .parse()
                    .map_err(|_| format!("invalid argument to {name}"))?;
                if name == "-maxdepth" {
                    self.maxdepth = Some(n);
                } else {
                    self.mindepth = n;
                }
                Test::True
            }
            "-depth"
            | "-d"
            | "-xdev"
            | "-mount"
            | "-follow"
            | "-noleaf"
            | "-ignore_readdir_race" => {
                self.i += 1;
                Test::True
            }
            "-readable" | "-writable" | "-executable" => {
                self.i += 1;
                Test::True
            }
            "-user" | "-group" | "-perm" | "-uid" | "-gid" => {
                self.value(&name)?;
                Test::True
            }
            "-nouser" | "-nogroup" | "-links" => {
                self.i += 1;
                Test::False
            }
            "-print" | "-print0" => {
                self.i += 1;
                return Ok(self.act(Action::Print(if name == "-print0" { 0 } else { b'\n' })));
            }
            "-printf" => {
                let v = self.value(&name)?;
                return Ok(self.act(Action::Printf(v)));
            }
            "-ls" | "-fprint" => {
                self.i += 1;
                return Ok(self.act(Action::Print(b'\n')));
            }
            "-delete" => {
                self.i += 1;
                return Ok(self.act(Action::Delete));
            }
            "-prune" => {
                self.i += 1;
                return Ok(self.act(Action::Prune));
            }
            "-quit" => {
                self.i += 1;
                return Ok(self.act(Action::Quit));
            }
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                self.i += 1;
                let mut cmd = Vec::new();
                loop {
                    let Some(x) = self.args.get(self.i).cloned() else {
                        return Err(format!("missing argument to `{name}'"));
                    };
                    self.i += 1;
                    if x == b";" {
                        return Ok(self.act(Action::Exec(cmd, false)));
                    }
                    if x == b"+" && cmd.last().is_some_and(|l: &Vec<u8>| l == b"{}") {
                        return Ok(self.act(Action::Exec(cmd, true)));
                    }
                    cmd.push(x);
                }
            }
            _ => return Err(format!("unknown predicate `{name}'")),
        };
        Ok(E::Test(test))
    }

    fn act(&mut self, a: Action) -> E {
        self.actions.push(a);
        E::Act(self.actions.len() - 1)
    }
}
