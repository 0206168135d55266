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

/// JSON text with every control character but a newline written as a JSON `\uXXXX` escape;
/// borrowed when there is none. A JSON writer escapes C0 characters inside strings already and
/// leaves DEL and C1 as they are (valid JSON, but raw bytes a terminal obeys); outside strings
/// JSON has only whitespace, so the result is the same JSON document, terminal-safe.
pub fn json_escaped_controls(s: &str) -> Cow<'_, str> {
    if !has_control(s, &|c| c == '\n') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() && c != '\n' {
            // Writing to a String cannot fail.
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Whether `s` holds a control character `keep` does not keep. Control characters are C0
/// (bytes below 0x20), DEL (0x7f) and C1 (U+0080-U+009F, in UTF-8 a 0xc2 lead byte): a text
/// with none of those bytes has none, which a byte scan tells fast (outputs run to megabytes).
///
/// The bytes are first tested eight at a time, as one `u64`, for any byte below 0x20, DEL or
/// 0xc2 (the word tricks of "Bit Twiddling Hacks": exact for "any", a few instructions a word);
/// only a word holding one is tested byte by byte with `keep` (a table's newline costs one
/// such word a line).
fn has_control(s: &str, keep: &impl Fn(char) -> bool) -> bool {
    let suspect = |b: u8| (b < 0x20 && !keep(char::from(b))) || b == 0x7f || b == 0xc2;
    let (words, tail) = s.as_bytes().as_chunks::<8>();
    let any_suspect = words.iter().any(|w| may_hold_control(u64::from_le_bytes(*w)) && w.iter().copied().any(suspect))
        || tail.iter().copied().any(suspect);
    any_suspect && s.chars().any(|c| c.is_control() && !keep(c))
}

/// Whether some byte of `word` is below 0x20, 0x7f or 0xc2. Exact: never false when one is.
fn may_hold_control(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // A byte below n (n <= 0x80) borrows into its high bit, which the byte itself lacks.
    let below = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x & HIGHS;
    below(word, 0x20) | below(word ^ (ONES * 0x7f), 1) | below(word ^ (ONES * 0xc2), 1) != 0
}

fn escape(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !has_control(s, &keep) {
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

    #[test]
    fn the_byte_scan_agrees_with_the_character_test_around_every_control_range() {
        // Every character at the edges of C0, DEL and C1, and others sharing C1's 0xc2 lead byte.
        let edges = ['\0', '\t', '\n', '\x1f', ' ', '~', '\x7f', '\u{80}', '\u{9f}', '\u{a0}', '©', 'ÿ', 'é'];
        for c in edges {
            let text = format!("a{c}b");
            let keep = |k: char| k == '\n' || k == '\t';
            assert_eq!(has_control(&text, &keep), c.is_control() && !keep(c), "{c:?}");
            assert_eq!(matches!(printable_lines(&text), Cow::Borrowed(_)), !c.is_control() || keep(c), "{c:?}");
            // At every offset of a text long enough for whole words, in a word and in the tail.
            for at in 0..24 {
                let text = format!("{}{c}{}", "a".repeat(at), "b".repeat(24 - at));
                assert_eq!(has_control(&text, &keep), c.is_control() && !keep(c), "{c:?} at {at}");
                assert_eq!(has_control(&text, &|_| false), c.is_control(), "{c:?} at {at}, nothing kept");
            }
        }
    }

    #[test]
    fn the_word_test_finds_every_suspect_byte_whatever_its_neighbours() {
        let suspect = |b: u8| b < 0x20 || b == 0x7f || b == 0xc2;
        // Every pair of byte values, in neighbouring and distant places of a word, the other
        // bytes set to values either side of each edge (a borrow from one byte must neither hide
        // nor fake another).
        for filler in [0x20u8, 0x61, 0x80, 0xc3, 0xff] {
            for (i, j) in [(0, 1), (3, 4), (6, 7), (0, 7)] {
                for a in 0..=255u8 {
                    for b in 0..=255u8 {
                        let mut w = [filler; 8];
                        (w[i], w[j]) = (a, b);
                        let expected = suspect(a) || suspect(b);
                        assert_eq!(may_hold_control(u64::from_le_bytes(w)), expected, "{w:02x?}");
                    }
                }
            }
        }
    }

    #[test]
    fn json_controls_become_json_escapes_and_stay_valid_json() {
        let raw = serde_json::to_string_pretty(&serde_json::json!({"name": "a\u{7f}b\u{85}c\u{1b}d\te"})).unwrap();
        let escaped = json_escaped_controls(&raw);
        assert!(!escaped.chars().any(|c| c.is_control() && c != '\n'), "{escaped}");
        assert!(escaped.contains("a\\u007fb\\u0085c\\u001bd\\te"), "{escaped}");
        let back: serde_json::Value = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back["name"], "a\u{7f}b\u{85}c\u{1b}d\te");
        assert_eq!(printable_lines(&escaped), escaped, "the output escaping leaves it alone");
        assert!(matches!(json_escaped_controls("{\n}"), Cow::Borrowed(_)));
    }
}
