//! A tiny shell-style glob matcher for match keys (`pci = "0000:81:*"`, `interface = "ens[0-9]*"`).
//!
//! Syntax: `*` matches any run of characters (also none, also `:` and `.`), `?` exactly one
//! character, `[abc]` / `[a-z]` one character in the class, `[!a-z]` or `[^a-z]` one character not
//! in it; a `]` right after the opening `[` (or `[!`) is a literal. Every other character matches
//! itself, so a pattern without `*?[` is an exact comparison.

use std::fmt;

/// Why a pattern is not a valid glob; `pos` is the character index of the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GlobError {
    #[error("the character class opened at character {pos} has no closing `]`")]
    UnclosedClass { pos: usize },
    #[error("the range {lo}-{hi} at character {pos} runs backwards")]
    ReversedRange { lo: char, hi: char, pos: usize },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(char),
    AnyOne,
    AnyRun,
    Class { negated: bool, ranges: Vec<(char, char)> },
}

impl Token {
    /// Whether this single-character token accepts `c` (`AnyRun` never gets here).
    fn accepts(&self, c: char) -> bool {
        match self {
            Token::Literal(l) => *l == c,
            Token::AnyOne | Token::AnyRun => true,
            Token::Class { negated, ranges } => ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negated,
        }
    }
}

/// A compiled glob pattern. Invariant: `tokens` is the parse of `pattern`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    pattern: String,
    tokens: Vec<Token>,
}

impl Glob {
    /// Compiles `pattern`; fails only on an unclosed or backwards character class.
    pub fn new(pattern: &str) -> Result<Glob, GlobError> {
        let chars: Vec<char> = pattern.chars().collect();
        let mut tokens = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '*' => {
                    // Consecutive stars are one star.
                    if tokens.last() != Some(&Token::AnyRun) {
                        tokens.push(Token::AnyRun);
                    }
                    i += 1;
                }
                '?' => {
                    tokens.push(Token::AnyOne);
                    i += 1;
                }
                '[' => {
                    let (token, next) = parse_class(&chars, i)?;
                    tokens.push(token);
                    i = next;
                }
                c => {
                    tokens.push(Token::Literal(c));
                    i += 1;
                }
            }
        }
        Ok(Glob { pattern: pattern.to_owned(), tokens })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    /// Whether the whole of `text` matches the whole pattern.
    pub fn matches(&self, text: &str) -> bool {
        let text: Vec<char> = text.chars().collect();
        let (mut p, mut t) = (0, 0);
        // Position of the last `*` seen and the text index it is currently made to end at.
        let mut backtrack: Option<(usize, usize)> = None;
        while t < text.len() {
            match self.tokens.get(p) {
                Some(Token::AnyRun) => {
                    backtrack = Some((p, t));
                    p += 1;
                    continue;
                }
                Some(tok) if tok.accepts(text[t]) => {
                    p += 1;
                    t += 1;
                    continue;
                }
                _ => {}
            }
            match backtrack {
                // Let the last `*` swallow one more character and retry from there.
                Some((star, end)) => {
                    p = star + 1;
                    t = end + 1;
                    backtrack = Some((star, end + 1));
                }
                None => return false,
            }
        }
        self.tokens[p..].iter().all(|tok| *tok == Token::AnyRun)
    }
}

/// Parses the class starting at `chars[open] == '['`; returns it and the index after its `]`.
fn parse_class(chars: &[char], open: usize) -> Result<(Token, usize), GlobError> {
    let mut i = open + 1;
    let negated = matches!(chars.get(i), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    let first = i;
    loop {
        let Some(&c) = chars.get(i) else { return Err(GlobError::UnclosedClass { pos: open }) };
        if c == ']' && i != first {
            return Ok((Token::Class { negated, ranges }, i + 1));
        }
        if chars.get(i + 1) == Some(&'-') && chars.get(i + 2).is_some_and(|&h| h != ']') {
            let hi = chars[i + 2];
            if c > hi {
                return Err(GlobError::ReversedRange { lo: c, hi, pos: i });
            }
            ranges.push((c, hi));
            i += 3;
        } else {
            ranges.push((c, c));
            i += 1;
        }
    }
}

impl fmt::Display for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.pattern)
    }
}

impl serde::Serialize for Glob {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.pattern)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, t: &str) -> bool {
        Glob::new(p).unwrap().matches(t)
    }

    #[test]
    fn literals_are_exact() {
        assert!(m("mlx5_core", "mlx5_core"));
        assert!(!m("mlx5_core", "mlx5_cor"));
        assert!(!m("mlx5", "mlx5_core"));
        assert!(m("", ""));
        assert!(!m("", "x"));
    }

    #[test]
    fn star_and_question_mark() {
        assert!(m("0000:81:*", "0000:81:00.0"));
        assert!(m("0000:81:*", "0000:81:"));
        assert!(!m("0000:81:*", "0000:82:00.0"));
        assert!(m("*", ""));
        assert!(m("*.1", "0000:81:00.1"));
        assert!(!m("*.1", "0000:81:00.0"));
        assert!(m("ens?f*", "ens1f0np0"));
        assert!(!m("ens?f*", "ens10f0"));
        assert!(m("a*b*c", "axxbyybzzc"));
        assert!(!m("a*b*c", "axxbyybzz"));
        assert!(m("**x", "abx"));
    }

    #[test]
    fn classes() {
        assert!(m("eth[0-3]", "eth2"));
        assert!(!m("eth[0-3]", "eth4"));
        assert!(m("eth[!0-3]", "eth4"));
        assert!(m("eth[^0-3]", "eth9"));
        assert!(!m("eth[^0-3]", "eth0"));
        assert!(m("[]x]", "]"));
        assert!(m("[a-]", "-"));
        assert!(m("0000:[89]?:*", "0000:81:00.0"));
        assert!(!m("0000:[89]?:*", "0000:41:00.0"));
        // The negation mark is not a member: `[!a]` takes `!` (and `[`), not `a`.
        assert!(m("[!a]", "!") && m("[!a]", "[") && !m("[!a]", "a"));
        // A one-character range is a range, not a reversed one.
        assert!(m("[a-a]", "a") && !m("[a-a]", "b"));
    }

    #[test]
    fn a_glob_shows_its_pattern_as_written() {
        let g = Glob::new("mlx5_*").unwrap();
        assert_eq!((g.as_str(), g.to_string().as_str()), ("mlx5_*", "mlx5_*"));
    }

    #[test]
    fn bad_patterns() {
        assert_eq!(Glob::new("eth[0-3"), Err(GlobError::UnclosedClass { pos: 3 }));
        assert_eq!(Glob::new("[z-a]"), Err(GlobError::ReversedRange { lo: 'z', hi: 'a', pos: 1 }));
        assert_eq!(Glob::new("[]"), Err(GlobError::UnclosedClass { pos: 0 }));
    }
}
