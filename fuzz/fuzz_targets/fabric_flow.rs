#![no_main]
// See fabriq_fuzz::fabric_flow for the input layout and the properties checked.
libfuzzer_sys::fuzz_target!(|data: &[u8]| fabriq_fuzz::fabric_flow(data));
