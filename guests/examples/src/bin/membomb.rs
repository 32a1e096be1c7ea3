//! Hostile: allocates and touches memory until the allocator fails. Must
//! end as `memory_exhausted`.
fn main() {
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut chunk = vec![0u8; 8 << 20];
        for i in (0..chunk.len()).step_by(4096) {
            chunk[i] = 1;
        }
        hoard.push(std::hint::black_box(chunk));
    }
}
