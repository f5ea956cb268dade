#![no_main]
// See fabriq_fuzz::handshake_curve for the input layout and the properties checked.
libfuzzer_sys::fuzz_target!(|data: &[u8]| fabriq_fuzz::handshake_curve(data));
