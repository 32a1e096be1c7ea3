//! Hostile: prints forever. Must end as `output_truncated`, quickly.
use std::io::Write;

fn main() {
    let line = [b'x'; 1023];
    let mut out = std::io::stdout().lock();
    loop {
        if out
            .write_all(&line)
            .and_then(|_| out.write_all(b"\n"))
            .is_err()
        {
            // Keep trying: a hostile guest ignores errors.
            continue;
        }
    }
}
