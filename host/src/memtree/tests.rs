//! Unit tests of the tree: the cases review found, each named by what it
//! guarantees.

use super::*;

/// A directory removed while a handle holds it takes no new entries:
/// otherwise its children outlive it, its freed id is reused, and the
/// parents form a cycle that `depth` would walk forever (found in
/// review of the preview-1 layer, reachable from memfs too).
#[test]
fn a_removed_directory_held_open_takes_no_new_entries() {
    let mut t = Tree::new(Budget {
        bytes: 1 << 20,
        entries: 100,
        handles: 16,
    });
    t.mkdir(ROOT, "d").expect("the test's own tree");
    let dir = OpenFlags {
        directory: true,
        ..OpenFlags::default()
    };
    let h = t.open(HOST, ROOT, "d", dir).expect("the test's own tree");
    let d = t.node_of(h).expect("the test's own tree");
    t.rmdir(ROOT, "d").expect("the test's own tree");
    assert_eq!(t.mkdir(d, "e"), Err(TreeError::NotFound));
    let create = OpenFlags {
        create: true,
        ..OpenFlags::default()
    };
    assert_eq!(t.open(HOST, d, "f", create), Err(TreeError::NotFound));
    t.open(HOST, ROOT, "x", create)
        .map(|h| t.close(HOST, h))
        .expect("the test's own tree")
        .expect("the test's own tree");
    assert_eq!(t.rename(ROOT, "x", d, "x"), Err(TreeError::NotFound));
    t.close(HOST, h).expect("the test's own tree");
    // Everything is refunded and the tree still works.
    t.mkdir(ROOT, "d2").expect("the test's own tree");
    t.mkdir(ROOT, "d2/e").expect("the test's own tree");
    assert_eq!(t.entries(), 3);
}

const BIG: Budget = Budget {
    bytes: 1 << 20,
    entries: 1000,
    handles: 64,
};

#[test]
fn an_unlinked_open_file_stays_charged_until_closed() {
    let mut t = Tree::new(Budget {
        bytes: 100,
        entries: 10,
        handles: 4,
    });
    let h = t
        .open(
            HOST,
            ROOT,
            "a",
            OpenFlags {
                create: true,
                ..OpenFlags::default()
            },
        )
        .expect("create");
    let id = t.node_of(h).expect("node");
    t.write(id, 0, &[1; 50]).expect("write");
    t.unlink(ROOT, "a").expect("unlink");
    assert_eq!(
        (t.bytes(), t.entries()),
        (50, 1),
        "the name goes, the bytes stay"
    );
    assert_eq!(
        t.write(id, 50, &[1; 51]),
        Err(TreeError::NoSpace),
        "the cap holds"
    );
    assert_eq!(t.write(id, 50, &[1; 50]), Ok(50));
    t.close(HOST, h).expect("close");
    assert_eq!((t.bytes(), t.entries()), (0, 0));
}

#[test]
fn sparse_writes_are_charged_at_their_size_and_huge_offsets_refused() {
    let mut t = Tree::new(BIG);
    let h = t
        .open(
            HOST,
            ROOT,
            "s",
            OpenFlags {
                create: true,
                ..OpenFlags::default()
            },
        )
        .expect("create");
    let id = t.node_of(h).expect("node");
    assert_eq!(t.write(id, 1 << 63, b"x"), Err(TreeError::FileTooLarge));
    assert_eq!(t.write(id, 1 << 40, b"x"), Err(TreeError::NoSpace));
    t.write(id, 1000, b"x").expect("write");
    assert_eq!(t.bytes(), 1 + 1001);
    assert_eq!(t.read(id, 999, 10).expect("read"), b"\0x");
}

#[test]
fn handles_are_capped_and_paths_stay_inside() {
    let mut t = Tree::new(Budget { handles: 2, ..BIG });
    t.mkdir(ROOT, "d").expect("mkdir");
    let a = t.open(HOST, ROOT, "d", OpenFlags::default()).expect("one");
    let _b = t.open(HOST, ROOT, ".", OpenFlags::default()).expect("two");
    assert_eq!(
        t.open(HOST, ROOT, "d", OpenFlags::default()),
        Err(TreeError::TooManyHandles)
    );
    t.close(HOST, a).expect("close");
    assert!(t.open(HOST, ROOT, "d", OpenFlags::default()).is_ok());
    for bad in ["/etc/passwd", "..", "d/../..", "a\0b", "a\\b"] {
        assert!(t.resolve(ROOT, bad).is_err(), "{bad}");
    }
    assert_eq!(t.resolve(ROOT, "d/..").expect("root"), ROOT);
    assert_eq!(
        t.resolve(ROOT, &"x".repeat(10_000)),
        Err(TreeError::NameTooLong)
    );
    assert_eq!(t.mkdir(ROOT, &"n".repeat(256)), Err(TreeError::NameTooLong));
}

#[test]
fn renames_replace_files_refuse_cycles_and_keep_charges_exact() {
    let mut t = Tree::new(BIG);
    t.mkdir(ROOT, "a").expect("a");
    t.mkdir(ROOT, "a/b").expect("a/b");
    assert_eq!(t.rename(ROOT, "a", ROOT, "a/b/c"), Err(TreeError::Invalid));
    let f = |t: &mut Tree, p: &str, d: &[u8]| {
        let h = t
            .open(
                HOST,
                ROOT,
                p,
                OpenFlags {
                    create: true,
                    truncate: true,
                    ..OpenFlags::default()
                },
            )
            .expect("file");
        let id = t.node_of(h).expect("node");
        t.write(id, 0, d).expect("write");
        t.close(HOST, h).expect("close");
    };
    f(&mut t, "x", b"12345");
    f(&mut t, "y", b"1");
    t.rename(ROOT, "x", ROOT, "y").expect("over a file");
    assert_eq!(
        t.list(ROOT).expect("list"),
        [("a".into(), true), ("y".into(), false)]
    );
    // a, b, y: names 1 + 1 + 1, contents 5.
    assert_eq!((t.bytes(), t.entries()), (3 + 5, 3));
    assert_eq!(t.rename(ROOT, "y", ROOT, "a"), Err(TreeError::IsDirectory));
    assert_eq!(t.rmdir(ROOT, "a"), Err(TreeError::NotEmpty));
}

#[test]
fn handles_die_with_their_owner_and_only_their_owner_closes_them() {
    let mut t = Tree::new(Budget { handles: 8, ..BIG });
    let dead = new_owner();
    let live = new_owner();
    let create = OpenFlags {
        create: true,
        ..OpenFlags::default()
    };
    let f = t.open(dead, ROOT, "big", create).expect("open");
    t.write(t.node_of(f).expect("node"), 0, &[1u8; 100])
        .expect("write");
    t.unlink(ROOT, "big").expect("unlink while open");
    for _ in 0..5 {
        t.open_root(dead).expect("hold");
    }
    let mine = t.open_root(live).expect("live");
    assert_eq!(t.bytes(), 100, "the unlinked file is still charged");
    // Another owner cannot close the dead one's handle.
    assert_eq!(t.close(live, f), Err(TreeError::BadHandle));
    assert_eq!(t.release_owner(dead), 6);
    assert_eq!(t.bytes(), 0, "its charge went with it");
    assert_eq!(t.open_handles(), 1);
    assert_eq!(t.handles_of(live), 1);
    assert_eq!(t.close(dead, f), Err(TreeError::BadHandle));
    t.close(live, mine).expect("close");
}

#[test]
fn handle_numbers_wrap_and_never_collide() {
    let mut t = Tree::new(Budget { handles: 3, ..BIG });
    t.next_handle = u32::MAX - 1;
    let a = t.open_root(HOST).expect("a");
    let b = t.open_root(HOST).expect("b");
    let c = t.open_root(HOST).expect("c, after the wrap");
    assert_eq!((a, b, c), (u32::MAX - 1, u32::MAX, 1));
    t.close(HOST, b).expect("close");
    t.next_handle = 1;
    let d = t.open_root(HOST).expect("d skips 1, which is held");
    assert_eq!(d, 2);
}

#[test]
fn a_deep_chain_stops_at_the_depth_cap() {
    let mut t = Tree::new(Budget {
        entries: 10_000,
        ..BIG
    });
    let mut dir = ROOT;
    let mut made = 0;
    for _ in 0..2000 {
        match t.mkdir(dir, "d") {
            Ok(id) => {
                dir = id;
                made += 1;
            }
            Err(e) => {
                assert_eq!(e, TreeError::NameTooLong);
                break;
            }
        }
    }
    assert_eq!(made, MAX_DEPTH);
}
