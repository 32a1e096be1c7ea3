//! The grants file parser: any text gives a profile set or a typed error,
//! never a panic, and never a profile without an origin.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plimsoll::grant::profile::GrantProfiles;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let env = |k: &str| (k.len() < 64).then(|| format!("secret-for-{k}"));
    if let Ok(profiles) = GrantProfiles::from_json(text, &env) {
        for name in profiles.names() {
            let p = profiles.get(name).expect("listed profile");
            assert!(!p.origin.authority.is_empty());
        }
    }
});
