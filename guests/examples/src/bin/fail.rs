//! Exits with a non-zero code after writing to stderr.
fn main() {
    eprintln!("failing on purpose");
    std::process::exit(3);
}
