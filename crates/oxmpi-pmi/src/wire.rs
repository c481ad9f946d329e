//! PMI-1 line codec.
//!
//! A PMI-1 message is one line of space-separated `key=value` tokens ending in `\n`, the first
//! token being `cmd=NAME`. Inside a value, a backslash makes the next character literal, so values
//! may carry spaces. This is the format MPICH's Hydra and Slurm's `--mpi=pmi2` plugin speak on
//! `PMI_FD`; the limits below are Slurm's, the tightest of the servers we must work under.

use std::fmt;

/// Longest line a client may send: Slurm reads each request with a single 1024-byte `read`.
pub const MAX_LINE: usize = 1024;
/// Longest key (Slurm's `keylen_max`, PMI2's `PMI2_MAX_KEYLEN`).
pub const MAX_KEY: usize = 64;
/// Longest value (Slurm's `vallen_max`).
pub const MAX_VALUE: usize = 1024;
/// Longest KVS name (Slurm's `kvsname_max`).
pub const MAX_KVSNAME: usize = 256;
/// Longest line a server accepts before declaring the peer broken; leaves room for a full
/// value plus escapes and the command's other tokens.
pub const MAX_SERVER_LINE: usize = 4 * MAX_VALUE;

/// Why a line could not be encoded or parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    /// The line holds no tokens.
    Empty,
    /// The first token is not `cmd=...`.
    NoCommand,
    /// A token has no `=` or an invalid key.
    BadToken(String),
    /// A key longer than [`MAX_KEY`].
    KeyTooLong(usize),
    /// A value longer than [`MAX_VALUE`].
    ValueTooLong(usize),
    /// The encoded line is longer than the limit in force.
    LineTooLong(usize),
    /// A value holds a newline or NUL, which the protocol cannot carry.
    UnencodableValue,
    /// The bytes are not UTF-8.
    NotUtf8,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Empty => write!(f, "empty PMI line"),
            WireError::NoCommand => write!(f, "PMI line does not start with cmd="),
            WireError::BadToken(t) => write!(f, "malformed PMI token {t:?}"),
            WireError::KeyTooLong(n) => write!(f, "PMI key of {n} bytes exceeds {MAX_KEY}"),
            WireError::ValueTooLong(n) => {
                write!(f, "PMI value of {n} bytes exceeds {MAX_VALUE}")
            }
            WireError::LineTooLong(n) => write!(f, "PMI line of {n} bytes is too long"),
            WireError::UnencodableValue => write!(f, "PMI value contains a newline or NUL"),
            WireError::NotUtf8 => write!(f, "PMI line is not UTF-8"),
        }
    }
}

impl std::error::Error for WireError {}

fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'/')
}

/// One PMI-1 message: `cmd` plus ordered `key=value` arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    name: String,
    args: Vec<(String, String)>,
}

impl Command {
    /// A message whose first token is `cmd=name`.
    pub fn new(name: &str) -> Self {
        Command {
            name: name.to_owned(),
            args: Vec::new(),
        }
    }

    /// Appends `key=value`.
    pub fn arg(mut self, key: &str, value: impl fmt::Display) -> Self {
        self.args.push((key.to_owned(), value.to_string()));
        self
    }

    /// The command name (`put`, `barrier_in`, ...).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The first value given for `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.args
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The value for `key`, parsed as an integer.
    pub fn get_int(&self, key: &str) -> Option<i64> {
        self.get(key)?.trim().parse().ok()
    }

    /// Encodes the message as one line ending in `\n`, checking key and value limits.
    /// `max_line` is the limit of the receiving side ([`MAX_LINE`] towards a server).
    pub fn encode(&self, max_line: usize) -> Result<String, WireError> {
        let mut out = String::with_capacity(64);
        out.push_str("cmd=");
        out.push_str(&self.name);
        for (k, v) in &self.args {
            if !valid_key(k) {
                return Err(WireError::BadToken(k.clone()));
            }
            if k.len() > MAX_KEY {
                return Err(WireError::KeyTooLong(k.len()));
            }
            if v.len() > MAX_VALUE {
                return Err(WireError::ValueTooLong(v.len()));
            }
            out.push(' ');
            out.push_str(k);
            out.push('=');
            for c in v.chars() {
                match c {
                    '\n' | '\0' => return Err(WireError::UnencodableValue),
                    ' ' | '\\' => {
                        out.push('\\');
                        out.push(c);
                    }
                    _ => out.push(c),
                }
            }
        }
        out.push('\n');
        if out.len() > max_line {
            return Err(WireError::LineTooLong(out.len()));
        }
        Ok(out)
    }

    /// Parses one line (with or without its trailing newline).
    pub fn parse(line: &str) -> Result<Command, WireError> {
        let line = line.strip_suffix('\n').unwrap_or(line);
        let mut tokens = Vec::new();
        let mut cur = String::new();
        let mut chars = line.chars();
        let mut in_token = false;
        while let Some(c) = chars.next() {
            match c {
                ' ' => {
                    if in_token {
                        tokens.push(std::mem::take(&mut cur));
                        in_token = false;
                    }
                }
                '\\' => {
                    in_token = true;
                    // A trailing backslash stands for itself.
                    cur.push(chars.next().unwrap_or('\\'));
                }
                '\0' => return Err(WireError::UnencodableValue),
                _ => {
                    in_token = true;
                    cur.push(c);
                }
            }
        }
        if in_token {
            tokens.push(cur);
        }
        let mut it = tokens.into_iter();
        let first = it.next().ok_or(WireError::Empty)?;
        let name = match first.split_once('=') {
            Some(("cmd", v)) if !v.is_empty() => v.to_owned(),
            Some(("mcmd", v)) if !v.is_empty() => v.to_owned(),
            _ => return Err(WireError::NoCommand),
        };
        let mut args = Vec::new();
        for t in it {
            let (k, v) = t
                .split_once('=')
                .ok_or_else(|| WireError::BadToken(t.clone()))?;
            if !valid_key(k) {
                return Err(WireError::BadToken(t.clone()));
            }
            if k.len() > MAX_KEY {
                return Err(WireError::KeyTooLong(k.len()));
            }
            if v.len() > MAX_VALUE {
                return Err(WireError::ValueTooLong(v.len()));
            }
            args.push((k.to_owned(), v.to_owned()));
        }
        Ok(Command { name, args })
    }
}

/// Splits a byte stream into lines, refusing any line longer than a limit.
#[derive(Debug)]
pub struct LineBuffer {
    buf: Vec<u8>,
    max: usize,
}

impl LineBuffer {
    /// A buffer that rejects lines longer than `max` bytes (newline included).
    pub fn new(max: usize) -> Self {
        LineBuffer {
            buf: Vec::new(),
            max,
        }
    }

    /// Appends bytes read from the stream.
    pub fn extend(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Takes the next complete line, without its newline. `Ok(None)` until one has arrived.
    pub fn next_line(&mut self) -> Result<Option<String>, WireError> {
        match self.buf.iter().position(|&b| b == b'\n') {
            Some(i) => {
                if i + 1 > self.max {
                    return Err(WireError::LineTooLong(i + 1));
                }
                let rest = self.buf.split_off(i + 1);
                let mut line = std::mem::replace(&mut self.buf, rest);
                line.pop();
                String::from_utf8(line)
                    .map(Some)
                    .map_err(|_| WireError::NotUtf8)
            }
            None if self.buf.len() > self.max => Err(WireError::LineTooLong(self.buf.len())),
            None => Ok(None),
        }
    }

    /// Bytes of an unfinished line still held.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn encodes_in_order_with_newline() {
        let c = Command::new("put")
            .arg("kvsname", "kvs_1")
            .arg("key", "a")
            .arg("value", 7);
        assert_eq!(
            c.encode(MAX_LINE).unwrap(),
            "cmd=put kvsname=kvs_1 key=a value=7\n"
        );
    }

    #[test]
    fn escapes_spaces_and_backslashes() {
        let c = Command::new("abort").arg("message", r"a b\c");
        let line = c.encode(MAX_LINE).unwrap();
        assert_eq!(line, "cmd=abort message=a\\ b\\\\c\n");
        assert_eq!(
            Command::parse(&line).unwrap().get("message"),
            Some(r"a b\c")
        );
    }

    #[test]
    fn parses_hydra_style_replies() {
        let c = Command::parse("cmd=get_result rc=0 msg=success value=(vector,(0,1,4))\n").unwrap();
        assert_eq!(c.name(), "get_result");
        assert_eq!(c.get_int("rc"), Some(0));
        assert_eq!(c.get("value"), Some("(vector,(0,1,4))"));
        assert_eq!(c.get("missing"), None);
    }

    #[test]
    fn value_may_contain_equals_and_extra_spaces_between_tokens() {
        let c = Command::parse("cmd=put  key=k   value=a=b=c ").unwrap();
        assert_eq!(c.get("value"), Some("a=b=c"));
    }

    #[test]
    fn empty_value_is_allowed() {
        let c = Command::parse("cmd=get_result rc=0 value=").unwrap();
        assert_eq!(c.get("value"), Some(""));
    }

    #[test]
    fn rejects_malformed_lines() {
        assert_eq!(Command::parse(""), Err(WireError::Empty));
        assert_eq!(Command::parse("   \n"), Err(WireError::Empty));
        assert_eq!(Command::parse("put key=a"), Err(WireError::NoCommand));
        assert_eq!(Command::parse("cmd= key=a"), Err(WireError::NoCommand));
        assert!(matches!(
            Command::parse("cmd=put novalue"),
            Err(WireError::BadToken(_))
        ));
        assert!(matches!(
            Command::parse("cmd=put k!y=1"),
            Err(WireError::BadToken(_))
        ));
    }

    #[test]
    fn enforces_limits() {
        let long_key = "k".repeat(MAX_KEY + 1);
        assert_eq!(
            Command::new("put").arg(&long_key, 1).encode(MAX_LINE),
            Err(WireError::KeyTooLong(MAX_KEY + 1))
        );
        let long_val = "v".repeat(MAX_VALUE + 1);
        assert_eq!(
            Command::new("put").arg("key", &long_val).encode(usize::MAX),
            Err(WireError::ValueTooLong(MAX_VALUE + 1))
        );
        let line = format!("cmd=put key=a value={long_val}");
        assert_eq!(
            Command::parse(&line),
            Err(WireError::ValueTooLong(MAX_VALUE + 1))
        );
        let v = "v".repeat(MAX_VALUE);
        assert!(matches!(
            Command::new("put").arg("value", &v).encode(MAX_LINE),
            Err(WireError::LineTooLong(_))
        ));
        assert_eq!(
            Command::new("put").arg("value", "a\nb").encode(MAX_LINE),
            Err(WireError::UnencodableValue)
        );
    }

    #[test]
    fn line_buffer_splits_and_keeps_partial_lines() {
        let mut b = LineBuffer::new(64);
        b.extend(b"cmd=a\ncmd=b x=1\ncmd=");
        assert_eq!(b.next_line().unwrap().as_deref(), Some("cmd=a"));
        assert_eq!(b.next_line().unwrap().as_deref(), Some("cmd=b x=1"));
        assert_eq!(b.next_line().unwrap(), None);
        assert_eq!(b.pending(), 4);
        b.extend(b"c\n");
        assert_eq!(b.next_line().unwrap().as_deref(), Some("cmd=c"));
    }

    #[test]
    fn line_buffer_rejects_runaway_lines() {
        let mut b = LineBuffer::new(8);
        b.extend(b"cmd=abcdefgh");
        assert!(matches!(b.next_line(), Err(WireError::LineTooLong(_))));
        let mut b = LineBuffer::new(8);
        b.extend(b"\xff\xfe\n");
        assert_eq!(b.next_line(), Err(WireError::NotUtf8));
    }

    proptest! {
        #[test]
        fn round_trips_any_printable_value(
            key in "[a-zA-Z_][a-zA-Z0-9_-]{0,40}",
            value in "[ -~]{0,200}",
        ) {
            let c = Command::new("put").arg("key", &key).arg("value", &value);
            let line = c.encode(MAX_SERVER_LINE).unwrap();
            prop_assert!(line.ends_with('\n'));
            prop_assert_eq!(line.matches('\n').count(), 1);
            let back = Command::parse(&line).unwrap();
            prop_assert_eq!(back, c);
        }
    }
}
