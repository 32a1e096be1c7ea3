//! A tree's contents as a snapshot keeps them, and a tree made again from
//! them.
//!
//! Guarantees: [`Tree::export`] lists every named node — directories
//! before what they hold, names in byte order — with its bytes, its
//! modification time and its inode number, and nothing else (no handles:
//! those belong to instances); [`Tree::import`] (and [`Tree::fill`], into
//! an empty tree whose root instances already hold) builds a tree that lists,
//! reads and stats the same, charging every byte and entry to the budget
//! it is given, and refuses an image that is not a tree (a parent that
//! comes later or is a file, a name used twice, an invalid name, deeper
//! than [`super::MAX_DEPTH`]) or that does not fit the budget, building
//! nothing.

use super::tree::{Kind, Tree};
use super::{Budget, NodeId, ROOT, TreeError};
use std::collections::BTreeMap;

/// One named node of an image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageEntry {
    /// The entry (an index into [`TreeImage::entries`]) of the directory
    /// holding it; `None` for the root.
    pub parent: Option<u32>,
    pub name: String,
    /// `None` for a directory, the bytes for a file.
    pub data: Option<Vec<u8>>,
    pub mtime_ns: u64,
    pub ino: u64,
}

/// A tree's contents.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeImage {
    pub entries: Vec<ImageEntry>,
    pub root_mtime_ns: u64,
    /// The next inode number the tree would give.
    pub next_ino: u64,
}

impl Tree {
    /// Every named node, as [`TreeImage`].
    pub fn export(&self) -> TreeImage {
        let mut image = TreeImage {
            entries: Vec::new(),
            root_mtime_ns: self.node(ROOT).map(|n| n.mtime_ns).unwrap_or(0),
            next_ino: self.next_ino,
        };
        // (directory node, its entry index) still to list.
        let mut queue: Vec<(NodeId, Option<u32>)> = vec![(ROOT, None)];
        let mut next = 0;
        while next < queue.len() {
            let (dir, parent) = queue[next];
            next += 1;
            let Ok(node) = self.node(dir) else { continue };
            let Kind::Dir(children) = &node.kind else {
                continue;
            };
            for (name, &child) in children {
                let Ok(c) = self.node(child) else { continue };
                let index = image.entries.len() as u32;
                image.entries.push(ImageEntry {
                    parent,
                    name: name.clone(),
                    data: match &c.kind {
                        Kind::File(d) => Some(d.clone()),
                        Kind::Dir(_) => None,
                    },
                    mtime_ns: c.mtime_ns,
                    ino: c.ino,
                });
                if matches!(c.kind, Kind::Dir(_)) {
                    queue.push((child, Some(index)));
                }
            }
        }
        image
    }

    /// A tree within `budget` holding what `image` holds.
    pub fn import(image: &TreeImage, budget: Budget) -> Result<Tree, TreeError> {
        let mut tree = Tree::new(budget);
        tree.fill(image)?;
        Ok(tree)
    }

    /// Fills this tree, which must hold nothing but its root (handles on
    /// the root stay as they are), with what `image` holds. On an error the
    /// tree may hold part of the image: discard it.
    pub fn fill(&mut self, image: &TreeImage) -> Result<(), TreeError> {
        if !matches!(&self.node(ROOT)?.kind, Kind::Dir(d) if d.is_empty()) {
            return Err(TreeError::NotEmpty);
        }
        let tree = self;
        let mut nodes: Vec<NodeId> = Vec::with_capacity(image.entries.len().min(1 << 16));
        let mut max_ino = 1u64;
        for (i, e) in image.entries.iter().enumerate() {
            let dir = match e.parent {
                None => ROOT,
                Some(p) if (p as usize) < i => nodes[p as usize],
                Some(_) => return Err(TreeError::Invalid),
            };
            super::paths::check_name(&e.name)?;
            if tree.lookup(dir, &e.name)?.is_some() {
                return Err(TreeError::Invalid);
            }
            let kind = match &e.data {
                None => Kind::Dir(BTreeMap::new()),
                Some(_) => Kind::File(Vec::new()),
            };
            let id = tree.link(dir, &e.name, kind)?;
            if let Some(data) = &e.data {
                tree.write(id, 0, data)?;
            }
            let n = tree.node_mut(id)?;
            n.mtime_ns = e.mtime_ns;
            n.ino = e.ino;
            max_ino = max_ino.max(e.ino);
            nodes.push(id);
        }
        // The directories' times, as the files' links changed them.
        for (i, e) in image.entries.iter().enumerate() {
            if e.data.is_none() {
                tree.node_mut(nodes[i])?.mtime_ns = e.mtime_ns;
            }
        }
        tree.node_mut(ROOT)?.mtime_ns = image.root_mtime_ns;
        tree.next_ino = image.next_ino.max(max_ino.saturating_add(1));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memtree::{HOST, OpenFlags};

    fn budget() -> Budget {
        Budget {
            bytes: 1 << 20,
            entries: 100,
            handles: 16,
        }
    }

    #[test]
    fn an_exported_tree_imports_as_the_same_tree() {
        let mut t = Tree::new(budget());
        t.set_now(5);
        t.mkdir(ROOT, "a").expect("mkdir");
        t.mkdir(ROOT, "a/b").expect("mkdir");
        let h = t
            .open(
                HOST,
                ROOT,
                "a/b/f.bin",
                OpenFlags {
                    create: true,
                    ..OpenFlags::default()
                },
            )
            .expect("open");
        let f = t.resolve(ROOT, "a/b/f.bin").expect("resolve");
        t.set_now(9);
        t.write(f, 0, &[0, 1, 2, 255]).expect("write");
        t.close(HOST, h).expect("close");
        t.mkdir(ROOT, "empty").expect("mkdir");
        let image = t.export();
        let u = Tree::import(&image, budget()).expect("import");
        assert_eq!(u.export(), image);
        assert_eq!(u.bytes(), t.bytes());
        assert_eq!(u.entries(), t.entries());
        let g = u.resolve(ROOT, "a/b/f.bin").expect("resolve");
        assert_eq!(u.read(g, 0, 10).expect("read"), &[0, 1, 2, 255]);
        assert_eq!(u.stat(g).expect("stat"), {
            let mut s = t.stat(f).expect("stat");
            s.node = g;
            s
        });
    }

    #[test]
    fn an_image_that_is_not_a_tree_or_too_big_builds_nothing() {
        let file = |parent, name: &str| ImageEntry {
            parent,
            name: name.into(),
            data: Some(b"x".to_vec()),
            mtime_ns: 0,
            ino: 2,
        };
        let bad = [
            vec![file(Some(0), "self")],
            vec![file(None, "f"), file(Some(0), "under-a-file")],
            vec![file(None, "twice"), file(None, "twice")],
            vec![file(None, "a/b")],
            vec![file(None, "..")],
        ];
        for entries in bad {
            let image = TreeImage {
                entries,
                ..TreeImage::default()
            };
            assert!(Tree::import(&image, budget()).is_err(), "{image:?}");
        }
        let big = TreeImage {
            entries: vec![ImageEntry {
                data: Some(vec![0; 2 << 20]),
                ..file(None, "big")
            }],
            ..TreeImage::default()
        };
        assert_eq!(Tree::import(&big, budget()).err(), Some(TreeError::NoSpace));
    }
}
