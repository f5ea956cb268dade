//! What received messages keep alive: a message decoded from the read
//! buffer is a slice of it, so the buffer's memory lives as long as the
//! message; what the connection must not do is leave memory pinned that
//! no message uses.

mod common;

use std::time::Instant;

use common::connected_types;
use fabriq_zmtp::connection::DEFAULT_READ_CHUNK;
use fabriq_zmtp::{Event, SocketType};

/// A receiver whose messages queue up while its reads bring a few kB at a
/// time reads each into the room the previous ones left, so the buffers
/// its queued messages hold are mostly those messages: it used to take a
/// new 64 KiB chunk for every read (the room left in the old one could not
/// be reused while its messages lived), 64 KiB held per 2 kB queued.
#[test]
fn queued_messages_from_short_reads_share_their_read_buffers() {
    let (mut pull, _push) = connected_types(SocketType::Pull, SocketType::Push);
    let body = [5u8; 62]; // 64 bytes with its header: too large to inline
    let mut read = Vec::new();
    for _ in 0..32 {
        read.extend_from_slice(&[0, body.len() as u8]);
        read.extend_from_slice(&body);
    }
    let reads = 1000;
    let mut queued = Vec::new();
    let mut buffers = 0;
    let mut end: Option<*const u8> = None;
    for _ in 0..reads {
        let buf = pull.recv_buf();
        // Where the previous read's bytes ended, if the buffer is the same.
        if end != Some(buf.as_ptr()) {
            buffers += 1;
        }
        buf.extend_from_slice(&read);
        end = Some(buf.as_ptr().wrapping_add(buf.len()));
        pull.input_received(Instant::now());
        while let Ok(Some(Event::Message(m))) = pull.poll_event() {
            assert_eq!(&m[0][..], &body[..]);
            queued.push(m); // the socket has not taken it yet
        }
    }
    assert_eq!(queued.len(), reads * 32);
    let pinned = buffers * DEFAULT_READ_CHUNK;
    let used = reads * read.len();
    assert!(
        pinned <= 2 * used,
        "{buffers} buffers of {DEFAULT_READ_CHUNK} B ({pinned} B) for {used} B of messages"
    );
}

/// Messages that no longer live leave the buffer to be reused in place:
/// a receiver that keeps up reads every time into the same memory.
#[test]
fn a_receiver_that_keeps_up_reuses_one_read_buffer() {
    let (mut pull, _push) = connected_types(SocketType::Pull, SocketType::Push);
    let mut read = Vec::new();
    for _ in 0..100 {
        read.extend_from_slice(&[0, 62]);
        read.extend_from_slice(&[9u8; 62]);
    }
    let mut starts = std::collections::HashSet::new();
    for _ in 0..1000 {
        let buf = pull.recv_buf();
        buf.extend_from_slice(&read);
        pull.input_received(Instant::now());
        let mut n = 0;
        while let Ok(Some(Event::Message(m))) = pull.poll_event() {
            starts.insert(m[0].as_ptr() as usize / DEFAULT_READ_CHUNK);
            n += 1;
        }
        assert_eq!(n, 100);
    }
    // Every message came from one or two 64 KiB-aligned stretches of
    // memory: the same allocation, over and over.
    assert!(starts.len() <= 3, "{} regions", starts.len());
}
