//! Lists every entry under `/work`, one path per line, so tests can check
//! that a run sees only its own workspace.
fn walk(dir: &std::path::Path, depth: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        println!("{}", p.display());
        if depth < 8 && p.is_dir() {
            walk(&p, depth + 1);
        }
    }
}

fn main() {
    walk(std::path::Path::new("/work"), 0);
}
