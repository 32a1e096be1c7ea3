//! Allocation churn: allocates and frees many buffers. Must end `ok` with a
//! bounded memory peak.
fn main() {
    let mut total = 0u64;
    for i in 0..2_000u64 {
        let size = 1 << (10 + (i % 11)); // 1 KiB .. 1 MiB
        let v = std::hint::black_box(vec![(i & 0xff) as u8; size]);
        total += v.len() as u64;
        drop(v);
    }
    println!("churned {total} bytes");
}
