//! The PMI-2 message format: a strict parser and a checking encoder.
//!
//! After the PMI-1-style `cmd=init pmi_version=2 pmi_subversion=0` line
//! (see [`super::reply::parse_init_reply`]), every PMI-2 message in either
//! direction is a 6-byte length header and a body of that many bytes:
//!
//! ```text
//! 30    cmd=kvs-fence-response;rc=0;
//! ```
//!
//! What this module accepts, and why:
//!
//! - The header is the body's length in decimal, padded with spaces to 6
//!   bytes. MPICH's client and Slurm's `mpi/pmi2` plugin both write it
//!   left-justified (`"%-6d"`) and read it with `atoi`, so leading spaces
//!   are accepted too; anything else in the header (a sign, a letter, a
//!   space between digits) is rejected. Bodies longer than
//!   [`MAX_MESSAGE`] (MPICH's `PMII_MAX_COMMAND_LEN`) are rejected before
//!   a byte of them is read.
//! - The body is a sequence of `key=value;` pairs, the first of which is
//!   `cmd=NAME;`. Every pair ends with `;`, the last one included (as MPICH
//!   and Slurm write them); a body that ends inside a pair is rejected.
//! - Inside a value, `;;` stands for one `;` (MPICH's `parse_keyval`). The
//!   key runs up to the first `=`, so keys cannot contain `=` or `;`; keys
//!   use `[A-Za-z0-9_/-]` and are at most [`MAX_KEY`] bytes.
//! - Values are printable ASCII and spaces, at most [`MAX_VALUE`] bytes
//!   once unescaped (MPICH's `PMI2_MAX_VALLEN`); they may be empty. Control
//!   bytes and non-ASCII are rejected: no PMI-2 server sends them.
//! - Each key appears at most once (replies never repeat one; only the
//!   `spawn` request, which this client does not send, does).
//!
//! A message is the same [`Message`] (command and ordered pairs) as
//! PMI-1's; only the framing differs. The parser never panics and never
//! allocates more than the body's size.

use crate::wire::is_key_byte;
pub use crate::wire::Message;

/// The length of the header before every message body.
pub const HEADER_LEN: usize = 6;

/// The longest body this module reads or writes (MPICH's
/// `PMII_MAX_COMMAND_LEN`, 64 KiB). The header could announce up to
/// 999,999 bytes; a peer that does is refused before its body is read.
pub const MAX_MESSAGE: usize = 64 * 1024;

/// The longest key (MPICH's and Slurm's `PMI2_MAX_KEYLEN`).
pub const MAX_KEY: usize = 64;

/// The longest value once unescaped (`PMI2_MAX_VALLEN`).
pub const MAX_VALUE: usize = 1024;

/// Why bytes are not a valid PMI-2 message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// The 6-byte header is not a space-padded decimal number.
    #[error("length header {header:?} is not a space-padded decimal number")]
    BadHeader {
        /// The header, lossily decoded.
        header: String,
    },
    /// The announced or encoded body is longer than [`MAX_MESSAGE`].
    #[error("message body of {len} bytes is longer than {max}")]
    TooLong {
        /// The body length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The bytes after the header are not as long as the header says.
    #[error("header announces {announced} bytes, {actual} follow")]
    LengthMismatch {
        /// The header's length.
        announced: usize,
        /// The bytes that follow it.
        actual: usize,
    },
    /// A byte that PMI-2 bodies cannot contain.
    #[error("byte {byte:#04x} at offset {offset} is not printable ASCII")]
    BadByte {
        /// Offset of the byte in the body.
        offset: usize,
        /// The byte.
        byte: u8,
    },
    /// The body does not start with `cmd=`, or names an empty command.
    #[error("body does not start with `cmd=NAME;`")]
    NoCmd,
    /// The body ends inside a pair (no `=` after a key, or no `;` after a
    /// value).
    #[error("pair starting at offset {offset} is not terminated by `;`")]
    Unterminated {
        /// Offset of the pair's first byte in the body.
        offset: usize,
    },
    /// A key that is empty, too long, or has characters outside
    /// `[A-Za-z0-9_/-]`.
    #[error("key {key:?} is empty, longer than {MAX_KEY} bytes, or has characters outside [A-Za-z0-9_/-]")]
    BadKey {
        /// The offending key.
        key: String,
    },
    /// A value longer than [`MAX_VALUE`] bytes.
    #[error("value of key {key:?} is {len} bytes; PMI-2 allows at most {MAX_VALUE}")]
    ValueTooLong {
        /// The key.
        key: String,
        /// The value's length.
        len: usize,
    },
    /// A value the encoder cannot send (control byte or non-ASCII).
    #[error("value of key {key:?} has characters PMI-2 cannot carry")]
    BadValue {
        /// The key.
        key: String,
    },
    /// The same key twice in one message.
    #[error("key {key:?} appears more than once")]
    DuplicateKey {
        /// The repeated key.
        key: String,
    },
}

/// Whether `b` may appear in a value: printable ASCII or space.
pub fn is_value_byte(b: u8) -> bool {
    (0x20..=0x7e).contains(&b)
}

fn check_key(key: &str) -> Result<(), WireError> {
    if key.is_empty() || key.len() > MAX_KEY || !key.bytes().all(is_key_byte) {
        return Err(WireError::BadKey {
            key: key.to_owned(),
        });
    }
    Ok(())
}

/// Parses a 6-byte length header.
///
/// # Errors
/// [`WireError::BadHeader`] unless `header` is 6 bytes of spaces around 1
/// to 6 decimal digits; [`WireError::TooLong`] above [`MAX_MESSAGE`].
pub fn parse_header(header: &[u8]) -> Result<usize, WireError> {
    let bad = || WireError::BadHeader {
        header: String::from_utf8_lossy(header).into_owned(),
    };
    if header.len() != HEADER_LEN {
        return Err(bad());
    }
    let start = header.iter().position(|&b| b != b' ').ok_or_else(bad)?;
    let digits = &header[start..];
    let end = digits
        .iter()
        .position(|&b| b == b' ')
        .unwrap_or(digits.len());
    let (digits, pad) = digits.split_at(end);
    if !digits.iter().all(u8::is_ascii_digit) || !pad.iter().all(|&b| b == b' ') {
        return Err(bad());
    }
    // At most 6 ASCII digits: always a valid usize.
    let len = digits
        .iter()
        .fold(0usize, |n, &d| n * 10 + usize::from(d - b'0'));
    if len > MAX_MESSAGE {
        return Err(WireError::TooLong {
            len,
            max: MAX_MESSAGE,
        });
    }
    Ok(len)
}

/// Parses a whole frame: the 6-byte header and exactly the body it
/// announces.
///
/// # Errors
/// A [`WireError`] naming the first thing wrong.
pub fn parse(frame: &[u8]) -> Result<Message, WireError> {
    let Some((header, body)) = frame.split_at_checked(HEADER_LEN) else {
        return Err(WireError::BadHeader {
            header: String::from_utf8_lossy(frame).into_owned(),
        });
    };
    let announced = parse_header(header)?;
    if body.len() != announced {
        return Err(WireError::LengthMismatch {
            announced,
            actual: body.len(),
        });
    }
    parse_body(body)
}

/// Parses a body (the bytes after the header).
///
/// # Errors
/// A [`WireError`] naming the first thing wrong with the body.
pub fn parse_body(body: &[u8]) -> Result<Message, WireError> {
    if body.len() > MAX_MESSAGE {
        return Err(WireError::TooLong {
            len: body.len(),
            max: MAX_MESSAGE,
        });
    }
    // Every byte first, so the splitting below sees only ASCII (and the
    // `str` conversions cannot fail).
    if let Some(offset) = body.iter().position(|&b| !is_value_byte(b)) {
        return Err(WireError::BadByte {
            offset,
            byte: body[offset],
        });
    }
    if !body.starts_with(b"cmd=") {
        return Err(WireError::NoCmd);
    }
    let text = std::str::from_utf8(body).map_err(|e| WireError::BadByte {
        offset: e.valid_up_to(),
        byte: body[e.valid_up_to()],
    })?;
    // `starts_with("cmd=")`: the first pair is the command.
    let (key, cmd, mut at) = pair(text, 0)?;
    if key != "cmd" || cmd.is_empty() {
        return Err(WireError::NoCmd);
    }
    let mut msg = Message::new(&cmd);
    while at < text.len() {
        let (key, value, next) = pair(text, at)?;
        if key == "cmd" || msg.get(&key).is_some() {
            return Err(WireError::DuplicateKey { key });
        }
        msg = msg.arg(&key, value);
        at = next;
    }
    Ok(msg)
}

/// Encodes `msg` as a frame: header and body, values escaped.
///
/// # Errors
/// A [`WireError`] for the first key or value that cannot be sent, or
/// [`WireError::TooLong`] if the body exceeds [`MAX_MESSAGE`].
pub fn encode(msg: &Message) -> Result<Vec<u8>, WireError> {
    check_key(msg.cmd()).map_err(|_| WireError::NoCmd)?;
    let mut body = format!("cmd={};", msg.cmd());
    let args = msg.args();
    for (i, (key, value)) in args.iter().enumerate() {
        check_key(key)?;
        if key == "cmd" || args[..i].iter().any(|(k, _)| k == key) {
            return Err(WireError::DuplicateKey { key: key.clone() });
        }
        if !value.bytes().all(is_value_byte) {
            return Err(WireError::BadValue { key: key.clone() });
        }
        if value.len() > MAX_VALUE {
            return Err(WireError::ValueTooLong {
                key: key.clone(),
                len: value.len(),
            });
        }
        body.push_str(key);
        body.push('=');
        body.push_str(&value.replace(';', ";;"));
        body.push(';');
    }
    if body.len() > MAX_MESSAGE {
        return Err(WireError::TooLong {
            len: body.len(),
            max: MAX_MESSAGE,
        });
    }
    let mut frame = format!("{:<width$}", body.len(), width = HEADER_LEN).into_bytes();
    frame.extend_from_slice(body.as_bytes());
    Ok(frame)
}

/// The pair starting at byte `at` of `text`: its key, its unescaped value,
/// and the offset after its terminating `;`.
fn pair(text: &str, at: usize) -> Result<(String, String, usize), WireError> {
    let rest = &text[at..];
    let eq = rest
        .find('=')
        .ok_or(WireError::Unterminated { offset: at })?;
    let key = &rest[..eq];
    check_key(key)?;
    let bytes = rest.as_bytes();
    let mut value = String::new();
    let mut i = eq + 1;
    loop {
        match bytes.get(i) {
            None => return Err(WireError::Unterminated { offset: at }),
            Some(b';') if bytes.get(i + 1) == Some(&b';') => {
                value.push(';');
                i += 2;
            }
            Some(b';') => break,
            Some(&b) => {
                value.push(char::from(b));
                i += 1;
            }
        }
    }
    if value.len() > MAX_VALUE {
        return Err(WireError::ValueTooLong {
            key: key.to_owned(),
            len: value.len(),
        });
    }
    Ok((key.to_owned(), value, at + i + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(s: &str) -> Result<Message, WireError> {
        parse_body(s.as_bytes())
    }

    #[test]
    fn parses_slurm_replies() {
        // As Slurm 22.05's mpi/pmi2 plugin writes them (client_resp_send).
        let reply = "cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;\
                     rank=3;size=4;appnum=-1;debugged=FALSE;pmiverbose=FALSE;";
        let m = parse(format!("{:<6}{reply}", reply.len()).as_bytes()).unwrap();
        assert_eq!(m.cmd(), "fullinit-response");
        assert_eq!(m.get("rank"), Some("3"));
        assert_eq!(m.get("appnum"), Some("-1"));
        assert_eq!(m.args().len(), 8);
        let m = body("cmd=kvs-get-response;rc=0;found=TRUE;value=a=b c;").unwrap();
        assert_eq!(m.get("value"), Some("a=b c"));
        let m =
            body("cmd=info-getjobattr-response;rc=0;found=TRUE;value=(vector,(0,1,4));").unwrap();
        assert_eq!(m.get("value"), Some("(vector,(0,1,4))"));
    }

    #[test]
    fn headers_are_space_padded_decimals() {
        assert_eq!(parse_header(b"30    "), Ok(30));
        assert_eq!(parse_header(b"    30"), Ok(30));
        assert_eq!(parse_header(b"  30  "), Ok(30));
        assert_eq!(parse_header(b"0     "), Ok(0));
        assert_eq!(parse_header(b"065536"), Ok(65536));
        for bad in [
            &b"      "[..],
            b"3 0   ",
            b"+30   ",
            b"-1    ",
            b"0x10  ",
            b"30\0   ",
            b"30\t   ",
            b"30   ",
            b"30     ",
        ] {
            assert!(
                matches!(parse_header(bad), Err(WireError::BadHeader { .. })),
                "{bad:?}"
            );
        }
        assert_eq!(
            parse_header(b"999999"),
            Err(WireError::TooLong {
                len: 999_999,
                max: MAX_MESSAGE
            })
        );
        assert_eq!(
            parse(b"12    cmd=x;"),
            Err(WireError::LengthMismatch {
                announced: 12,
                actual: 6
            })
        );
        assert!(matches!(parse(b"12"), Err(WireError::BadHeader { .. })));
    }

    #[test]
    fn escaped_semicolons() {
        let m = body("cmd=kvs-get-response;value=a;;b;;;next=;;;").unwrap();
        assert_eq!(m.get("value"), Some("a;b;"));
        assert_eq!(m.get("next"), Some(";"));
        // `;;` at the very end escapes a `;`: the value is unterminated.
        assert_eq!(
            body("cmd=x;value=a;;"),
            Err(WireError::Unterminated { offset: 6 })
        );
        let sent = Message::new("kvs-put")
            .arg("key", "k")
            .arg("value", ";a;;b;");
        let frame = encode(&sent).unwrap();
        assert_eq!(
            std::str::from_utf8(&frame).unwrap(),
            "35    cmd=kvs-put;key=k;value=;;a;;;;b;;;"
        );
        assert_eq!(parse(&frame).unwrap(), sent);
    }

    #[test]
    fn round_trips() {
        let cases = [
            Message::new("fullinit")
                .arg("pmijobid", "12.0")
                .arg("pmirank", "3")
                .arg("threaded", "FALSE"),
            Message::new("kvs-fence"),
            Message::new("kvs-get-response")
                .arg("rc", "0")
                .arg("found", "TRUE")
                .arg("value", ""),
            Message::new("abort")
                .arg("isworld", "TRUE")
                .arg("msg", "disk full; giving up = 1"),
            Message::new("kvs-put")
                .arg("key", "k".repeat(MAX_KEY))
                .arg("value", ";".repeat(MAX_VALUE)),
        ];
        for m in cases {
            let frame = encode(&m).unwrap();
            assert_eq!(parse(&frame).as_ref(), Ok(&m), "{m:?}");
            assert_eq!(parse_header(&frame[..HEADER_LEN]), Ok(frame.len() - 6));
        }
    }

    #[test]
    fn rejects_malformed_bodies() {
        assert_eq!(body(""), Err(WireError::NoCmd));
        assert_eq!(body("rc=0;cmd=x;"), Err(WireError::NoCmd));
        assert_eq!(body(" cmd=x;"), Err(WireError::NoCmd));
        assert_eq!(body("cmd=;"), Err(WireError::NoCmd));
        assert_eq!(body("cmd=x"), Err(WireError::Unterminated { offset: 0 }));
        assert_eq!(
            body("cmd=x;rc=0"),
            Err(WireError::Unterminated { offset: 6 })
        );
        assert_eq!(
            body("cmd=x;junk;"),
            Err(WireError::Unterminated { offset: 6 })
        );
        assert_eq!(
            body("cmd=x;junk;a=1;"),
            Err(WireError::BadKey {
                key: "junk;a".into()
            })
        );
        assert_eq!(
            body("cmd=x;junk"),
            Err(WireError::Unterminated { offset: 6 })
        );
        assert_eq!(
            body("cmd=x;=1;"),
            Err(WireError::BadKey { key: String::new() })
        );
        assert_eq!(
            body("cmd=x;a.b=1;"),
            Err(WireError::BadKey { key: "a.b".into() })
        );
        assert!(matches!(
            body(&format!("cmd=x;{}=1;", "k".repeat(MAX_KEY + 1))),
            Err(WireError::BadKey { .. })
        ));
        assert_eq!(
            body("cmd=x;rc=0;rc=1;"),
            Err(WireError::DuplicateKey { key: "rc".into() })
        );
        assert_eq!(
            body("cmd=x;cmd=y;"),
            Err(WireError::DuplicateKey { key: "cmd".into() })
        );
        assert_eq!(
            body(&format!("cmd=x;v={};", "a".repeat(MAX_VALUE + 1))),
            Err(WireError::ValueTooLong {
                key: "v".into(),
                len: MAX_VALUE + 1
            })
        );
        assert!(matches!(
            parse_body(b"cmd=x;v=\xc3\xa9;"),
            Err(WireError::BadByte { byte: 0xc3, .. })
        ));
        assert!(matches!(
            parse_body(b"cmd=x;v=a\nb;"),
            Err(WireError::BadByte { byte: b'\n', .. })
        ));
        assert!(matches!(
            parse_body(b"cmd=x;v=\0;"),
            Err(WireError::BadByte { byte: 0, .. })
        ));
        let huge = vec![b'a'; MAX_MESSAGE + 1];
        assert!(matches!(parse_body(&huge), Err(WireError::TooLong { .. })));
    }

    #[test]
    fn encoder_refuses_what_pmi2_cannot_carry() {
        let one = |k: &str, v: &str| encode(&Message::new("kvs-put").arg(k, v));
        assert!(matches!(
            one("key", "a\nb"),
            Err(WireError::BadValue { .. })
        ));
        assert!(matches!(one("key", "é"), Err(WireError::BadValue { .. })));
        assert!(matches!(one("a=b", "1"), Err(WireError::BadKey { .. })));
        assert!(matches!(one("a;b", "1"), Err(WireError::BadKey { .. })));
        assert!(matches!(one("", "1"), Err(WireError::BadKey { .. })));
        assert!(matches!(
            one("cmd", "1"),
            Err(WireError::DuplicateKey { .. })
        ));
        assert!(matches!(
            one("v", &"a".repeat(MAX_VALUE + 1)),
            Err(WireError::ValueTooLong { .. })
        ));
        let twice = encode(&Message::new("x").arg("k", "1").arg("k", "2"));
        assert!(matches!(twice, Err(WireError::DuplicateKey { .. })));
        assert_eq!(encode(&Message::new("a b")), Err(WireError::NoCmd));
        assert_eq!(encode(&Message::new("")), Err(WireError::NoCmd));
        let mut big = Message::new("x");
        for i in 0..70 {
            big = big.arg(&format!("k{i}"), "v".repeat(MAX_VALUE));
        }
        assert!(matches!(encode(&big), Err(WireError::TooLong { .. })));
    }
}
