//! `--label`: relaying a rank's output line by line with a `[rank] ` prefix.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// A line longer than this is passed on in pieces (each labeled and ended
/// with a newline) rather than buffered without bound.
const MAX_PENDING: usize = 64 * 1024;

/// Which of the launcher's streams a relay writes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sink {
    Stdout,
    Stderr,
}

/// One pipe from a rank, with the partial line read so far.
#[derive(Debug)]
pub(crate) struct LineRelay {
    pipe: File,
    label: String,
    sink: Sink,
    pending: Vec<u8>,
}

impl LineRelay {
    pub(crate) fn new(pipe: OwnedFd, rank: u32, sink: Sink) -> Self {
        LineRelay {
            pipe: File::from(pipe),
            label: format!("[{rank}] "),
            sink,
            pending: Vec::new(),
        }
    }

    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.pipe.as_fd()
    }

    /// Reads once (the pipe is readable, so this does not block) and
    /// writes out every complete line. Returns `false` at end of file,
    /// after flushing a last unterminated line.
    pub(crate) fn pump(&mut self) -> bool {
        let mut chunk = [0u8; 16 * 1024];
        match (&self.pipe).read(&mut chunk) {
            Ok(0) => {
                self.finish();
                false
            }
            Ok(n) => {
                self.push(&chunk[..n]);
                true
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                ) =>
            {
                true
            }
            Err(_) => {
                self.finish();
                false
            }
        }
    }

    /// Labels and writes every complete line in `data` (plus what was
    /// pending); keeps the unterminated tail.
    fn push(&mut self, data: &[u8]) {
        self.pending.extend_from_slice(data);
        let mut out = Vec::new();
        let mut start = 0;
        while let Some(nl) = self.pending[start..].iter().position(|&b| b == b'\n') {
            let end = start + nl + 1;
            out.extend_from_slice(self.label.as_bytes());
            out.extend_from_slice(&self.pending[start..end]);
            start = end;
        }
        self.pending.drain(..start);
        if self.pending.len() >= MAX_PENDING {
            out.extend_from_slice(self.label.as_bytes());
            out.append(&mut self.pending);
            out.push(b'\n');
        }
        self.emit(&out);
    }

    /// End of stream: a last line without `\n` still gets its label and a
    /// newline, so the next rank's output starts on a line of its own.
    fn finish(&mut self) {
        if !self.pending.is_empty() {
            let mut out = self.label.as_bytes().to_vec();
            out.append(&mut self.pending);
            out.push(b'\n');
            self.emit(&out);
        }
    }

    /// One `write_all` of whole lines: lines of different ranks never mix.
    fn emit(&self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        // A closed stdout (`ferryrun ... | head`) must not stop the job or
        // the draining of the ranks' pipes, so write errors are dropped.
        let _ = match self.sink {
            Sink::Stdout => io::stdout().lock().write_all(bytes),
            Sink::Stderr => io::stderr().lock().write_all(bytes),
        };
    }
}
