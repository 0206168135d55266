//! Text from the system, made safe to print: IRQ names, interface and driver names, file
//! contents quoted in messages may hold control characters (an `ESC ]0;…BEL` retitles a
//! terminal, a NUL truncates a log line). Pure.

use std::borrow::Cow;
use std::fmt::Write;

/// `s` with every control character (C0, DEL, C1) written as `\xNN` (`\u{NNNN}` above 0xff);
/// borrowed when there is none. For one-line fields: newlines and tabs are escaped too.
pub(crate) fn printable(s: &str) -> Cow<'_, str> {
    escape(s, |_| false)
}

/// [`printable`] for whole outputs: newlines and tabs are kept, every other control character
/// escaped.
pub fn printable_lines(s: &str) -> Cow<'_, str> {
    escape(s, |c| c == '\n' || c == '\t')
}

fn escape(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() && !keep(c) {
            let code = u32::from(c);
            // Writing to a String cannot fail.
            let _ = if code <= 0xff { write!(out, "\\x{code:02x}") } else { write!(out, "\\u{{{code:04x}}}") };
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_plain_text_borrowed() {
        assert!(matches!(printable("eth0-TxRx-3"), Cow::Borrowed(_)));
        assert_eq!(printable("a\x1b]0;owned\x07b\0c"), "a\\x1b]0;owned\\x07b\\x00c");
        assert_eq!(printable("x\u{85}y\u{7f}"), "x\\x85y\\x7f");
        assert_eq!(printable("two\nlines"), "two\\x0alines");
        assert_eq!(printable_lines("two\nlines\t\x1b"), "two\nlines\t\\x1b");
        assert_eq!(printable("é ü"), "é ü");
    }
}
