#![no_main]
// See fabriq_fuzz::frame for the input layout and the properties checked.
libfuzzer_sys::fuzz_target!(|data: &[u8]| fabriq_fuzz::frame(data));
