//! Leaves a mark: writes `/work/out/mark` and prints `marked`. Used to prove
//! that a refused run executes nothing.
fn main() {
    match std::fs::write("/work/out/mark", b"I ran") {
        Ok(()) => println!("marked"),
        Err(e) => {
            eprintln!("could not mark: {e}");
            std::process::exit(1);
        }
    }
}
