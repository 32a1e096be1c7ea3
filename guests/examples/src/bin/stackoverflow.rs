//! Hostile: unbounded recursion on the wasm stack. Must end as `trap`
//! (stack overflow), and the host must keep serving.
#![allow(unconditional_recursion)]

#[inline(never)]
fn deeper(n: u64) -> u64 {
    // `black_box` keeps the call from becoming a loop or a tail call.
    std::hint::black_box(deeper(std::hint::black_box(n + 1))) + 1
}

fn main() {
    println!("{}", deeper(0));
}
