//! The layout of a vocabulary's whole-character flags ([`atomic`](super::atomic)), shared by
//! the build script that writes them (`atomic_find.rs`) and the reader.
//!
//! The flags are two arrays of [`CODE_POINTS`] little-endian `u16`, one entry per code point of
//! the Basic Multilingual Plane:
//!
//! 1. one bit per (kind of the byte before, kind of the byte after), at [`flag`], set where the
//!    character may start whole;
//! 2. one bit per lead byte `0xE0 + j` of a three-byte character after it, set where the
//!    character may start whole after a continuation byte (inside Chinese or Japanese text,
//!    where a token that starts with the character's last byte and the next character's first
//!    bytes would otherwise stop it).

/// Code points the flags cover: the Basic Multilingual Plane.
pub const CODE_POINTS: usize = 0x1_0000;

/// Bytes of one vocabulary's flags: two arrays of `u16`.
pub const FLAGS_BYTES: usize = 2 * 2 * CODE_POINTS;

/// What borders a character in a piece: a byte of one of three kinds, or the piece's edge.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Edge = 0,
    Ascii = 1,
    Continuation = 2,
    Lead = 3,
}

/// Every kind, in the order of their values.
pub const KINDS: [Kind; 4] = [Kind::Edge, Kind::Ascii, Kind::Continuation, Kind::Lead];

impl Kind {
    /// The kind of a neighbouring byte, [`Kind::Edge`] when there is none.
    pub fn of(byte: Option<&u8>) -> Kind {
        match byte {
            None => Kind::Edge,
            Some(0..=0x7F) => Kind::Ascii,
            Some(0x80..=0xBF) => Kind::Continuation,
            Some(_) => Kind::Lead,
        }
    }
}

/// The flag of a character beside `before` and `after`.
pub fn flag(before: Kind, after: Kind) -> u16 {
    1 << (before as u16 * 4 + after as u16)
}

/// The length of the character a lead byte starts (1 for any other byte).
fn char_len(lead: u8) -> usize {
    match lead {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 1,
    }
}

fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

/// The code point and length of the well-formed two- or three-byte character at `at`.
pub fn decode(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    let lead = *bytes.get(at)?;
    match char_len(lead) {
        2 => {
            let second = *bytes.get(at + 1)?;
            is_continuation(second).then(|| {
                (
                    (usize::from(lead & 0x1F) << 6) | usize::from(second & 0x3F),
                    2,
                )
            })
        }
        3 => {
            let second = *bytes.get(at + 1)?;
            let third = *bytes.get(at + 2)?;
            if !is_continuation(second) || !is_continuation(third) {
                return None;
            }
            let code_point = (usize::from(lead & 0x0F) << 12)
                | (usize::from(second & 0x3F) << 6)
                | usize::from(third & 0x3F);
            // Overlong forms and surrogates are not characters.
            (code_point >= 0x800 && !(0xD800..0xE000).contains(&code_point))
                .then_some((code_point, 3))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::decode;

    #[test]
    fn two_and_three_byte_characters_decode_to_their_code_points() {
        let text = "aé中\u{7ff}\u{800}";
        let bytes = text.as_bytes();
        assert_eq!(decode(bytes, 0), None, "ASCII is not decoded here");
        assert_eq!(decode(bytes, 1), Some((0xe9, 2)));
        assert_eq!(decode(bytes, 3), Some((0x4e2d, 3)));
        assert_eq!(decode(bytes, 6), Some((0x7ff, 2)));
        assert_eq!(decode(bytes, 8), Some((0x800, 3)));
        // A lead byte without its continuation, or cut short, is no character.
        assert_eq!(decode(&[0xc3, 0x41], 0), None);
        assert_eq!(decode(&[0xe4, 0xb8], 0), None);
        assert_eq!(decode(&[0xe4, 0xb8, 0x41], 0), None);
        // Overlong forms and surrogates are not characters.
        assert_eq!(decode(&[0xe0, 0x80, 0x80], 0), None);
        assert_eq!(decode(&[0xed, 0xa0, 0x80], 0), None);
    }
}
