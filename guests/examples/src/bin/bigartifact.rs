//! Hostile: writes a large artifact. Size in MiB on stdin (default 64).
use std::io::{Read, Write};

fn main() {
    let mut s = String::new();
    let _ = std::io::stdin().read_to_string(&mut s);
    let mib: usize = s.trim().parse().unwrap_or(64);
    let chunk = vec![0x5au8; 1 << 20];
    let mut f = match std::fs::File::create("/work/out/big.bin") {
        Ok(f) => f,
        Err(e) => {
            eprintln!("create failed: {e}");
            std::process::exit(1);
        }
    };
    for _ in 0..mib {
        if let Err(e) = f.write_all(&chunk) {
            eprintln!("write failed: {e}");
            std::process::exit(1);
        }
    }
    println!("wrote {mib} MiB");
}
