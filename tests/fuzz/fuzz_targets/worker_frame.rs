//! The worker protocol, read by the supervisor from a worker that may be
//! compromised: any byte stream gives frames or a typed error, never a
//! panic and never an allocation past the frame cap.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plimsoll::worker::protocol::{FromWorker, ToWorker, read_blocking};

fuzz_target!(|data: &[u8]| {
    let mut r = std::io::Cursor::new(data);
    for _ in 0..8 {
        if read_blocking::<FromWorker>(&mut r).is_err() {
            break;
        }
    }
    let mut r = std::io::Cursor::new(data);
    let _ = read_blocking::<ToWorker>(&mut r);
});
