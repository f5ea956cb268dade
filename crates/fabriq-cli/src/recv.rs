//! Incoming messages: receiving a whole message, and printing it as one
//! line on stdout.

use std::io::{self, BufWriter, Stdout, Write};

use bytes::Bytes;
use fabriq::Socket;

use crate::format::Codec;

/// Receives every frame of one message.
pub fn recv_message(socket: &Socket, flags: i32) -> fabriq::Result<Vec<Bytes>> {
    let mut frames = vec![socket.recv_zc(flags)?];
    while socket.get_rcvmore()? {
        frames.push(socket.recv_zc(0)?);
    }
    Ok(frames)
}

/// Total size of a message's frames.
pub fn size(frames: &[Bytes]) -> usize {
    frames.iter().map(Bytes::len).sum()
}

/// Writes messages to stdout, one line each. Output is buffered and
/// flushed whenever the program is about to wait.
pub struct Printer {
    out: BufWriter<Stdout>,
    codec: Codec,
    line: Vec<u8>,
}

impl Printer {
    /// A printer using `codec`.
    pub fn new(codec: Codec) -> Printer {
        Printer {
            out: BufWriter::with_capacity(64 * 1024, io::stdout()),
            codec,
            line: Vec::new(),
        }
    }

    /// Writes one message.
    pub fn print(&mut self, frames: &[Bytes]) -> io::Result<()> {
        self.line.clear();
        self.codec.encode(frames, &mut self.line);
        self.line.push(b'\n');
        self.out.write_all(&self.line)
    }

    /// Writes what is buffered.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
