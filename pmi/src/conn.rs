//! The connection to the launcher, shared by both protocol versions: an
//! inherited Unix socket (`PMI_FD`) or a TCP connection (`PMI_PORT`), with
//! bounded reads of a line (PMI-1, and PMI-2's opening `init`) or of an
//! exact byte count (PMI-2's length-prefixed messages).

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use ferry_core::BootstrapError;

use super::wire::{excerpt, MAX_LINE};

/// The connection to the launcher: an inherited Unix socket (`PMI_FD`) or a
/// TCP connection (`PMI_PORT`).
#[derive(Debug)]
pub(crate) enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(t),
            Stream::Tcp(s) => s.set_read_timeout(t),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A connection with a bounded read buffer.
#[derive(Debug)]
pub(crate) struct Conn {
    stream: Stream,
    /// Bytes received but not yet consumed as a line or message.
    buf: Vec<u8>,
}

impl Conn {
    pub(crate) fn new(stream: Stream) -> Self {
        Conn {
            stream,
            buf: Vec::new(),
        }
    }

    pub(crate) fn send(&mut self, bytes: &[u8]) -> Result<(), BootstrapError> {
        self.stream
            .write_all(bytes)
            .map_err(|e| BootstrapError::Io(format!("sending to the launcher: {e}")))
    }

    /// Bounds how long one read waits (`None`: forever).
    pub(crate) fn set_timeout(&self, timeout: Option<Duration>) -> Result<(), BootstrapError> {
        self.stream
            .set_read_timeout(timeout)
            .map_err(|e| BootstrapError::Io(format!("setting the PMI reply timeout: {e}")))
    }

    /// Reads one line, `\n` included, of at most [`MAX_LINE`] bytes.
    pub(crate) fn read_line(&mut self, op: &str) -> Result<Vec<u8>, BootstrapError> {
        loop {
            if let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
                return Ok(self.buf.drain(..=end).collect());
            }
            if self.buf.len() >= MAX_LINE {
                return Err(BootstrapError::Protocol(format!(
                    "reply to `{op}`: line is longer than {MAX_LINE} bytes: {}",
                    excerpt(&self.buf)
                )));
            }
            // Never read past the bound, so a flood costs at most MAX_LINE.
            self.fill(MAX_LINE - self.buf.len(), op, "line")?;
        }
    }

    /// Reads exactly `n` bytes (the caller bounds `n`).
    pub(crate) fn read_exact(&mut self, n: usize, op: &str) -> Result<Vec<u8>, BootstrapError> {
        while self.buf.len() < n {
            self.fill(n - self.buf.len(), op, "message")?;
        }
        Ok(self.buf.drain(..n).collect())
    }

    /// One read of at most `room` bytes into the buffer; end of stream is
    /// an error (`what` names the unit cut short).
    fn fill(&mut self, room: usize, op: &str, what: &str) -> Result<(), BootstrapError> {
        let mut chunk = [0u8; 1024];
        let room = room.min(chunk.len());
        loop {
            match self.stream.read(&mut chunk[..room]) {
                Ok(0) if self.buf.is_empty() => {
                    return Err(BootstrapError::Io(format!(
                        "the launcher closed the PMI connection while we waited for the reply to `{op}`"
                    )))
                }
                Ok(0) => {
                    return Err(BootstrapError::Protocol(format!(
                        "reply to `{op}`: connection closed in the middle of a {what}: {}",
                        excerpt(&self.buf)
                    )))
                }
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                    return Err(BootstrapError::Io(format!(
                        "timed out waiting for the reply to `{op}`"
                    )))
                }
                Err(e) => {
                    return Err(BootstrapError::Io(format!(
                        "reading the reply to `{op}`: {e}"
                    )))
                }
            }
        }
    }

    /// How many bytes the server sent that nobody asked for yet.
    pub(crate) fn unread(&self) -> usize {
        self.buf.len()
    }
}
