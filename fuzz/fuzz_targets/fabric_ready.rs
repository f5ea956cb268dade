#![no_main]
// See fabriq_fuzz::fabric_ready for the input layout and the properties checked.
libfuzzer_sys::fuzz_target!(|data: &[u8]| fabriq_fuzz::fabric_ready(data));
