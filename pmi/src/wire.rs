//! The PMI-1 line format: a strict parser and a checking encoder.
//!
//! Every PMI-1 message is one line of printable ASCII:
//!
//! ```text
//! cmd=NAME key=value key=value\n
//! ```
//!
//! What this module accepts, and why:
//!
//! - The first token is `cmd=NAME`. MPICH's current parser (`pmi_wire.c`)
//!   rejects anything else, and so do we.
//! - Tokens are separated by runs of spaces; every token is `key=value`.
//!   A bare word (no `=`) is rejected: in a reply it can only be garbage.
//! - Keys use `[A-Za-z0-9_/-]`, the set MPICH's parser accepts (`IS_KEY`).
//! - A value runs from the first `=` to the next space, so it may itself
//!   contain `=` (every MPICH and Hydra version splits at the first `=`).
//!   It may not be empty: MPICH 4.1+ rejects `key=` ("Expecting value").
//! - Values cannot carry spaces, newlines, control bytes or non-ASCII:
//!   PMI-1 has no quoting that all servers agree on (MPICH 4.1+ unescapes
//!   `\`, Hydra 3.x and 4.0 do not). The encoder therefore also refuses `\`.
//! - Each key appears at most once; the line ends with `\n` and is at most
//!   [`MAX_LINE`] bytes long.
//!
//! The parser never panics and never allocates more than the line's size.

use std::fmt;

/// The longest line (including its `\n`) this module reads. Replies from
/// real servers are far shorter; the bound keeps a broken peer from making
/// us buffer without limit.
pub const MAX_LINE: usize = 4096;

/// The longest request line (including its `\n`) the client sends.
/// MPICH's servers read lines into `PMIU_MAXLINE` (1024-byte) buffers and
/// truncate longer ones silently, so we refuse to send them.
pub const MAX_REQUEST_LINE: usize = 1024;

/// Why a line is not valid PMI-1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// The line is longer than [`MAX_LINE`].
    #[error("line is longer than {max} bytes")]
    TooLong {
        /// The limit that was exceeded.
        max: usize,
    },
    /// The line does not end with `\n`.
    #[error("line does not end with a newline")]
    NoNewline,
    /// A byte that PMI-1 lines cannot contain.
    #[error("byte {byte:#04x} at offset {offset} is not printable ASCII")]
    BadByte {
        /// Offset of the byte in the line.
        offset: usize,
        /// The byte.
        byte: u8,
    },
    /// The line does not start with `cmd=`.
    #[error("line does not start with `cmd=`")]
    NoCmd,
    /// A token without `=`.
    #[error("token {token:?} is not of the form key=value")]
    NotKeyValue {
        /// The offending token.
        token: String,
    },
    /// A key with characters outside `[A-Za-z0-9_/-]`, or an empty key.
    #[error("key {key:?} is empty or has characters outside [A-Za-z0-9_/-]")]
    BadKey {
        /// The offending key.
        key: String,
    },
    /// `key=` with nothing after the `=`.
    #[error("key {key:?} has an empty value")]
    EmptyValue {
        /// The key.
        key: String,
    },
    /// A value the encoder cannot send (space, `\`, control or non-ASCII).
    #[error("value {value:?} of key {key:?} has characters PMI-1 cannot carry")]
    BadValue {
        /// The key.
        key: String,
        /// The offending value.
        value: String,
    },
    /// The same key twice in one line.
    #[error("key {key:?} appears more than once")]
    DuplicateKey {
        /// The repeated key.
        key: String,
    },
}

/// Whether `b` may appear in a key (MPICH's `IS_KEY`).
pub fn is_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'/'
}

/// Whether `b` may appear in a received value: printable ASCII except space.
pub fn is_value_byte(b: u8) -> bool {
    (0x21..=0x7e).contains(&b)
}

/// Whether `b` may appear in a value we send: as [`is_value_byte`], minus
/// `\`, which MPICH 4.1+ servers would treat as an escape.
pub fn is_sendable_value_byte(b: u8) -> bool {
    is_value_byte(b) && b != b'\\'
}

/// Checks that `key` is a non-empty string of key bytes.
///
/// # Errors
/// [`WireError::BadKey`] otherwise.
pub fn check_key(key: &str) -> Result<(), WireError> {
    if key.is_empty() || !key.bytes().all(is_key_byte) {
        return Err(WireError::BadKey {
            key: key.to_owned(),
        });
    }
    Ok(())
}

/// Checks that `value` can be sent: non-empty, sendable bytes only.
///
/// # Errors
/// [`WireError::EmptyValue`] or [`WireError::BadValue`].
pub fn check_value(key: &str, value: &str) -> Result<(), WireError> {
    if value.is_empty() {
        return Err(WireError::EmptyValue {
            key: key.to_owned(),
        });
    }
    if !value.bytes().all(is_sendable_value_byte) {
        return Err(WireError::BadValue {
            key: key.to_owned(),
            value: value.to_owned(),
        });
    }
    Ok(())
}

/// One PMI-1 message: the command name and its `key=value` arguments in
/// the order they appeared.
#[derive(Clone, PartialEq, Eq)]
pub struct Message {
    cmd: String,
    args: Vec<(String, String)>,
}

impl Message {
    /// A message with command `cmd` and no arguments. Nothing is checked
    /// until [`Message::encode`].
    pub fn new(cmd: &str) -> Self {
        Message {
            cmd: cmd.to_owned(),
            args: Vec::new(),
        }
    }

    /// Appends `key=value` (builder style).
    #[must_use]
    pub fn arg(mut self, key: &str, value: impl Into<String>) -> Self {
        self.args.push((key.to_owned(), value.into()));
        self
    }

    /// The command name (the value of `cmd=`).
    pub fn cmd(&self) -> &str {
        &self.cmd
    }

    /// The arguments after `cmd=`, in order.
    pub fn args(&self) -> &[(String, String)] {
        &self.args
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.args
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Parses one line, which must include its trailing `\n`.
    ///
    /// # Errors
    /// A [`WireError`] naming the first thing wrong with the line.
    pub fn parse(line: &[u8]) -> Result<Message, WireError> {
        if line.len() > MAX_LINE {
            return Err(WireError::TooLong { max: MAX_LINE });
        }
        let Some((&b'\n', body)) = line.split_last() else {
            return Err(WireError::NoNewline);
        };
        // Check every byte first, so the splitting below only ever sees
        // printable ASCII and spaces (and the `str` conversion cannot fail).
        if let Some(offset) = body.iter().position(|&b| b != b' ' && !is_value_byte(b)) {
            return Err(WireError::BadByte {
                offset,
                byte: body[offset],
            });
        }
        let body = std::str::from_utf8(body).map_err(|e| WireError::BadByte {
            offset: e.valid_up_to(),
            byte: body[e.valid_up_to()],
        })?;
        if !body.starts_with("cmd=") {
            return Err(WireError::NoCmd);
        }
        let mut cmd = None;
        let mut args: Vec<(String, String)> = Vec::new();
        for token in body.split(' ').filter(|t| !t.is_empty()) {
            let Some((key, value)) = token.split_once('=') else {
                return Err(WireError::NotKeyValue {
                    token: token.to_owned(),
                });
            };
            check_key(key)?;
            if value.is_empty() {
                return Err(WireError::EmptyValue {
                    key: key.to_owned(),
                });
            }
            if key == "cmd" {
                if cmd.is_some() {
                    return Err(WireError::DuplicateKey {
                        key: key.to_owned(),
                    });
                }
                cmd = Some(value.to_owned());
            } else {
                if args.iter().any(|(k, _)| k == key) {
                    return Err(WireError::DuplicateKey {
                        key: key.to_owned(),
                    });
                }
                args.push((key.to_owned(), value.to_owned()));
            }
        }
        // `starts_with("cmd=")` and the non-empty value check guarantee it.
        let cmd = cmd.ok_or(WireError::NoCmd)?;
        Ok(Message { cmd, args })
    }

    /// Encodes the message as one line ending in `\n`, checking every key
    /// and value (see the module docs for the rules).
    ///
    /// # Errors
    /// A [`WireError`] for the first key or value that cannot be sent, or
    /// [`WireError::TooLong`] if the line exceeds [`MAX_LINE`].
    pub fn encode(&self) -> Result<String, WireError> {
        check_value("cmd", &self.cmd)?;
        let mut line = format!("cmd={}", self.cmd);
        for (i, (key, value)) in self.args.iter().enumerate() {
            check_key(key)?;
            if key == "cmd" || self.args[..i].iter().any(|(k, _)| k == key) {
                return Err(WireError::DuplicateKey { key: key.clone() });
            }
            check_value(key, value)?;
            line.push(' ');
            line.push_str(key);
            line.push('=');
            line.push_str(value);
        }
        line.push('\n');
        if line.len() > MAX_LINE {
            return Err(WireError::TooLong { max: MAX_LINE });
        }
        Ok(line)
    }
}

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cmd={}", self.cmd)?;
        for (k, v) in &self.args {
            write!(f, " {k}={v}")?;
        }
        Ok(())
    }
}

/// A printable excerpt of a received line for error messages: escaped, and
/// cut to 200 bytes so a huge line does not flood the message.
pub fn excerpt(line: &[u8]) -> String {
    const KEEP: usize = 200;
    let shown = &line[..line.len().min(KEEP)];
    let mut s = String::from_utf8_lossy(shown).escape_debug().to_string();
    if line.len() > KEEP {
        s.push_str(&format!("... ({} bytes)", line.len()));
    }
    format!("\"{s}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Message, WireError> {
        Message::parse(s.as_bytes())
    }

    #[test]
    fn parses_a_reply_in_order() {
        let m = parse("cmd=get_result rc=0 msg=success value=a=b\n").unwrap();
        assert_eq!(m.cmd(), "get_result");
        assert_eq!(m.get("rc"), Some("0"));
        assert_eq!(m.get("msg"), Some("success"));
        // The value runs from the first `=` to the next space.
        assert_eq!(m.get("value"), Some("a=b"));
        assert_eq!(m.get("missing"), None);
        assert_eq!(m.args().len(), 3);
    }

    #[test]
    fn tolerates_runs_of_spaces_only() {
        let m = parse("cmd=barrier_out  rc=0 \n").unwrap();
        assert_eq!(m.cmd(), "barrier_out");
        assert_eq!(
            parse("cmd=barrier_out\trc=0\n"),
            Err(WireError::BadByte {
                offset: 15,
                byte: b'\t'
            })
        );
        assert!(matches!(
            parse("cmd=x\r\n"),
            Err(WireError::BadByte { byte: b'\r', .. })
        ));
    }

    #[test]
    fn rejects_malformed_lines() {
        assert_eq!(parse("cmd=x"), Err(WireError::NoNewline));
        assert_eq!(parse(""), Err(WireError::NoNewline));
        assert_eq!(parse("\n"), Err(WireError::NoCmd));
        assert_eq!(parse(" cmd=x\n"), Err(WireError::NoCmd));
        assert_eq!(parse("rc=0 cmd=x\n"), Err(WireError::NoCmd));
        assert_eq!(
            parse("cmd=\n"),
            Err(WireError::EmptyValue { key: "cmd".into() })
        );
        assert_eq!(
            parse("cmd=x junk\n"),
            Err(WireError::NotKeyValue {
                token: "junk".into()
            })
        );
        assert_eq!(
            parse("cmd=x =1\n"),
            Err(WireError::BadKey { key: String::new() })
        );
        assert_eq!(
            parse("cmd=x a.b=1\n"),
            Err(WireError::BadKey { key: "a.b".into() })
        );
        assert_eq!(
            parse("cmd=x rc=\n"),
            Err(WireError::EmptyValue { key: "rc".into() })
        );
        assert_eq!(
            parse("cmd=x rc=0 rc=1\n"),
            Err(WireError::DuplicateKey { key: "rc".into() })
        );
        assert_eq!(
            parse("cmd=x cmd=y\n"),
            Err(WireError::DuplicateKey { key: "cmd".into() })
        );
        assert!(matches!(
            Message::parse(b"cmd=x v=\xc3\xa9\n"),
            Err(WireError::BadByte { byte: 0xc3, .. })
        ));
        assert!(matches!(
            Message::parse(b"cmd=x\0\n"),
            Err(WireError::BadByte { byte: 0, .. })
        ));
        assert!(matches!(
            parse("cmd=x\ncmd=y\n"),
            Err(WireError::BadByte { byte: b'\n', .. })
        ));
    }

    #[test]
    fn rejects_overlong_lines() {
        let mut line = format!("cmd=x v={}", "a".repeat(MAX_LINE));
        line.push('\n');
        assert_eq!(parse(&line), Err(WireError::TooLong { max: MAX_LINE }));
        let mut ok = format!("cmd=x v={}", "a".repeat(MAX_LINE - 9));
        ok.push('\n');
        assert_eq!(ok.len(), MAX_LINE);
        assert!(parse(&ok).is_ok());
    }

    #[test]
    fn encodes_and_round_trips() {
        let m = Message::new("put")
            .arg("kvsname", "kvs_1")
            .arg("key", "shm/0")
            .arg("value", "ferry-abc=12");
        let line = m.encode().unwrap();
        assert_eq!(line, "cmd=put kvsname=kvs_1 key=shm/0 value=ferry-abc=12\n");
        assert_eq!(Message::parse(line.as_bytes()).unwrap(), m);
    }

    #[test]
    fn encoder_refuses_what_pmi_cannot_carry() {
        let bad = |k: &str, v: &str| Message::new("put").arg(k, v).encode();
        assert!(matches!(bad("key", "a b"), Err(WireError::BadValue { .. })));
        assert!(matches!(
            bad("key", "a\\b"),
            Err(WireError::BadValue { .. })
        ));
        assert!(matches!(
            bad("key", "a\nb"),
            Err(WireError::BadValue { .. })
        ));
        assert!(matches!(bad("key", "é"), Err(WireError::BadValue { .. })));
        assert!(matches!(bad("key", ""), Err(WireError::EmptyValue { .. })));
        assert!(matches!(bad("a=b", "1"), Err(WireError::BadKey { .. })));
        assert!(matches!(
            bad("cmd", "1"),
            Err(WireError::DuplicateKey { .. })
        ));
        let twice = Message::new("put").arg("k", "1").arg("k", "2").encode();
        assert!(matches!(twice, Err(WireError::DuplicateKey { .. })));
        assert!(matches!(
            Message::new("a b").encode(),
            Err(WireError::BadValue { .. })
        ));
    }

    #[test]
    fn excerpt_escapes_and_truncates() {
        assert_eq!(excerpt(b"cmd=x\n"), "\"cmd=x\\n\"");
        let long = vec![b'a'; 1000];
        let e = excerpt(&long);
        assert!(e.ends_with("... (1000 bytes)\""), "{e}");
        assert!(e.len() < 250);
    }
}
