#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| wpp_fuzz::deps_files(data));
