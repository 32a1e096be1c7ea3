//! The smallest agent: prints a greeting and exits 0.
fn main() {
    println!("hello from plimsoll");
}
