//! The script of each non-ASCII character, from its first two bytes.
//!
//! A 4 KB table indexed by the lead byte's low six bits and the second byte's low six bits
//! answers in one load; it is built at compile time from [`script_of`], the readable rule.
//! Ideographs and kana, most of CJK text, are counted a block at a time from byte masks.

use super::classify::{BLOCK_BYTES, classify_leads};

/// Kinds of non-ASCII characters the estimator prices differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Script {
    Han,
    Kana,
    Hangul,
    CjkPunctuation,
    Latin,
    Greek,
    Cyrillic,
    HebrewArabic,
    OtherTwoByte,
    Indic,
    Symbol,
    OtherThreeByte,
    FourByte,
}

/// Number of [`Script`] values; counters are arrays of this length.
pub(super) const SCRIPT_COUNT: usize = 13;

/// The script of a character starting with `lead` (0xc0..=0xff) then `second`.
const fn script_of(lead: u8, second: u8) -> Script {
    match (lead, second) {
        (0xc2, _) => Script::Symbol,
        (0xc3..=0xcc, _) => Script::Latin,
        (0xcd..=0xcf, _) => Script::Greek,
        (0xd0..=0xd4, _) => Script::Cyrillic,
        (0xd6..=0xdb, _) => Script::HebrewArabic,
        (0xc0..=0xdf, _) => Script::OtherTwoByte,
        (0xe0, _) => Script::Indic,
        (0xe2, _) => Script::Symbol,
        (0xe3, 0x80) | (0xef, 0xbc..=0xbf) => Script::CjkPunctuation,
        (0xe3, 0x81..=0x83) => Script::Kana,
        (0xe3, _) | (0xe4..=0xe9, _) => Script::Han,
        (0xea..=0xed, _) => Script::Hangul,
        (0xe1..=0xef, _) => Script::OtherThreeByte,
        _ => Script::FourByte,
    }
}

/// `TABLE[(lead & 0x3f) << 6 | (second & 0x3f)]`: a second byte is always 0x80..=0xbf.
static TABLE: [Script; 4096] = {
    let mut table = [Script::FourByte; 4096];
    let mut index = 0;
    while index < 4096 {
        let lead = 0xc0 | (index >> 6) as u8;
        let second = 0x80 | (index & 0x3f) as u8;
        table[index] = script_of(lead, second);
        index += 1;
    }
    table
};

/// Bits of one script's counter inside the packed counters.
const COUNTER_BITS: u32 = 4;

/// Characters counted into the packed counters before they are added to the totals, so no
/// counter overflows.
const PACKED_CHARACTERS_MAX: u32 = (1 << COUNTER_BITS) - 1;

const _: () = assert!(SCRIPT_COUNT as u32 * COUNTER_BITS <= 64);

/// Per-script character counts of one text.
#[derive(Debug, Default)]
pub(super) struct ScriptCounts {
    counts: [u64; SCRIPT_COUNT],
    /// Counts not yet added to `counts`, `COUNTER_BITS` per script. Counting into a register
    /// keeps consecutive characters of one script from waiting on each other's store.
    packed: u64,
    packed_characters: u32,
}

impl ScriptCounts {
    /// Counts the characters whose first byte is in `leads` (bit `i` is byte `i` of `block`;
    /// `next_byte` follows the block, 0x80 at the end of the text).
    pub(super) fn add_block(&mut self, block: &[u8; BLOCK_BYTES], next_byte: u8, leads: u64) {
        // The commonest CJK characters are counted from masks; the rest one by one.
        let common = classify_leads(block);
        let next_is_kana_second = u64::from((0x81..=0x83).contains(&next_byte));
        let kana_second_after = (common.kana_second >> 1) | (next_is_kana_second << 63);
        let han = leads & common.han;
        let kana = leads & common.e3 & kana_second_after;
        self.counts[Script::Han as usize] += u64::from(han.count_ones());
        self.counts[Script::Kana as usize] += u64::from(kana.count_ones());

        let mut rest = leads & !han & !kana;
        while rest != 0 {
            let index = rest.trailing_zeros() as usize & (BLOCK_BYTES - 1);
            rest &= rest - 1;
            let second = block.get(index + 1).copied().unwrap_or(next_byte);
            let key = usize::from(block[index] & 0x3f) << 6 | usize::from(second & 0x3f);
            self.packed += 1 << (TABLE[key] as u32 * COUNTER_BITS);
            self.packed_characters += 1;
            if self.packed_characters == PACKED_CHARACTERS_MAX {
                self.unpack();
            }
        }
    }

    /// The count of each script, indexed by `Script as usize`.
    pub(super) fn finish(mut self) -> [u64; SCRIPT_COUNT] {
        self.unpack();
        self.counts
    }

    fn unpack(&mut self) {
        for (script, count) in self.counts.iter_mut().enumerate() {
            *count +=
                (self.packed >> (script as u32 * COUNTER_BITS)) & PACKED_CHARACTERS_MAX as u64;
        }
        (self.packed, self.packed_characters) = (0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_agrees_with_the_rule_for_every_lead_and_second_byte() {
        // Every code point of the BMP, then every 64th beyond it: the second byte of a
        // four-byte character changes every 4096 code points.
        let supplementary = (0x1_0000..=0x10_ffffu32).step_by(64);
        for code_point in (0x80..=0xffffu32).chain(supplementary) {
            let Some(character) = char::from_u32(code_point) else {
                continue;
            };
            let mut buffer = [0u8; 4];
            let bytes = character.encode_utf8(&mut buffer).as_bytes();
            let mut block = [0u8; BLOCK_BYTES];
            block[..bytes.len()].copy_from_slice(bytes);
            let mut script_counts = ScriptCounts::default();
            script_counts.add_block(&block, 0x80, 1);
            let counts = script_counts.finish();
            let expected = script_of(bytes[0], bytes[1]) as usize;
            assert_eq!(counts[expected], 1, "U+{code_point:04X}");
            assert_eq!(counts.iter().sum::<u64>(), 1);
        }
    }

    #[test]
    fn scripts_are_recognised() {
        let cases = [
            ('我', Script::Han),
            ('の', Script::Kana),
            ('カ', Script::Kana),
            ('한', Script::Hangul),
            ('。', Script::CjkPunctuation),
            ('，', Script::CjkPunctuation),
            ('é', Script::Latin),
            ('λ', Script::Greek),
            ('Ж', Script::Cyrillic),
            ('ש', Script::HebrewArabic),
            ('م', Script::HebrewArabic),
            ('մ', Script::OtherTwoByte),
            ('म', Script::Indic),
            ('—', Script::Symbol),
            ('«', Script::Symbol),
            ('ა', Script::OtherThreeByte),
            ('🎉', Script::FourByte),
        ];
        for (character, script) in cases {
            let mut buffer = [0u8; 4];
            let bytes = character.encode_utf8(&mut buffer).as_bytes();
            assert_eq!(script_of(bytes[0], bytes[1]), script, "{character}");
        }
    }
}
