//! The in-memory workspace tree (host/src/memtree.rs) under any sequence of
//! operations on any paths: it never panics, never holds more than its
//! budgets, and its charges are exactly what it holds.
//!
//! Input: lines `OP PATH [PATH]`, OP one of m(kdir) o(pen) w(rite) t(runc)
//! u(nlink) r(mdir) n(ame: rename) c(lose).
#![no_main]

use libfuzzer_sys::fuzz_target;
use plimsoll::memtree::{Budget, HOST, OpenFlags, ROOT, Tree};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let budget = Budget {
        bytes: 4096,
        entries: 32,
        handles: 8,
    };
    let mut t = Tree::new(budget);
    let mut handles = Vec::new();
    for line in s.lines().take(256) {
        let mut it = line.splitn(3, ' ');
        let (op, a, b) = (
            it.next().unwrap_or(""),
            it.next().unwrap_or(""),
            it.next().unwrap_or(""),
        );
        match op {
            "m" => {
                let _ = t.mkdir(ROOT, a);
            }
            "o" => {
                let flags = OpenFlags {
                    create: b.contains('c'),
                    exclusive: b.contains('x'),
                    truncate: b.contains('t'),
                    directory: b.contains('d'),
                };
                if let Ok(h) = t.open(HOST, ROOT, a, flags) {
                    handles.push(h);
                }
            }
            "w" => {
                if let Ok(id) = t.resolve(ROOT, a) {
                    let off: u64 = b.len() as u64 * 97;
                    let _ = t.write(id, off, b.as_bytes());
                }
            }
            "t" => {
                if let Ok(id) = t.resolve(ROOT, a) {
                    let _ = t.set_size(id, b.len() as u64 * 131);
                }
            }
            "u" => {
                let _ = t.unlink(ROOT, a);
            }
            "r" => {
                let _ = t.rmdir(ROOT, a);
            }
            "n" => {
                let _ = t.rename(ROOT, a, ROOT, b);
            }
            "c" => {
                if let Some(h) = handles.pop() {
                    let _ = t.close(HOST, h);
                }
            }
            _ => {}
        }
        assert!(t.bytes() <= budget.bytes, "{} bytes held", t.bytes());
        assert!(
            t.entries() <= budget.entries,
            "{} entries held",
            t.entries()
        );
        assert!(t.open_handles() <= budget.handles as usize);
    }
    for h in handles {
        let _ = t.close(HOST, h);
    }
    // With every handle gone, what is charged is what the names reach.
    fn held(t: &Tree, dir: plimsoll::memtree::NodeId) -> (u64, u64) {
        let mut acc = (0, 0);
        for (name, is_dir) in t.list(dir).unwrap_or_default() {
            let Ok(id) = t.resolve(dir, &name) else {
                continue;
            };
            acc.0 += name.len() as u64;
            acc.1 += 1;
            if is_dir {
                let (b, e) = held(t, id);
                acc.0 += b;
                acc.1 += e;
            } else {
                acc.0 += t.stat(id).map(|s| s.size).unwrap_or(0);
            }
        }
        acc
    }
    assert_eq!(held(&t, ROOT), (t.bytes(), t.entries()));
});
