//! The script of each non-ASCII character, from its first two bytes.
//!
//! [`script_of`] is the readable rule. Only two lead bytes need the second byte: 0xe3 (CJK
//! punctuation, kana or ideographs) and 0xef (full-width forms or not). Those, and the
//! ideographs, are counted a block at a time from byte masks ([`LeadMasks`]): most of CJK text
//! costs a few population counts per block. Every other character's script follows from its
//! lead byte alone, so the rest are looked up one by one in a 64-entry table built at compile
//! time from the rule.

use super::classify::{BLOCK_BYTES, LeadMasks};

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
pub(super) const fn script_of(lead: u8, second: u8) -> Script {
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

/// `LEAD_TABLE[lead & 0x3f]`: the script of a character that starts with `lead`, for every
/// lead but 0xe3 and 0xef, whose characters the masks count (the entries for those two are
/// what is left once the masks have counted theirs: ideographs after 0xe3, and other
/// three-byte characters after 0xef).
static LEAD_TABLE: [Script; 64] = {
    let mut table = [Script::FourByte; 64];
    let mut index = 0;
    while index < 64 {
        let lead = 0xc0 | index as u8;
        table[index] = match lead {
            0xe3 => Script::Han,
            0xef => Script::OtherThreeByte,
            _ => script_of(lead, 0x80),
        };
        index += 1;
    }
    table
};

/// `LEAD_INCREMENT[lead & 0x3f]`: one character of `LEAD_TABLE`'s script in the packed
/// counters.
static LEAD_INCREMENT: [u64; 64] = {
    let mut increments = [0u64; 64];
    let mut index = 0;
    while index < 64 {
        increments[index] = 1 << (LEAD_TABLE[index] as u32 * COUNTER_BITS);
        index += 1;
    }
    increments
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
    /// `common` are the block's CJK masks; `next_byte` follows the block, 0x80 at the end of
    /// the text).
    #[inline(always)]
    pub(super) fn add_block(
        &mut self,
        block: &[u8; BLOCK_BYTES],
        common: &LeadMasks,
        next_byte: u8,
        leads: u64,
    ) {
        // Bit `i` is set when byte `i + 1` (the second byte of a character at `i`) is in the mask.
        let second = |mask: u64, next_in_mask: bool| (mask >> 1) | (u64::from(next_in_mask) << 63);
        let second_80 = second(common.second_80, next_byte == 0x80);
        let kana_second = second(common.kana_second, (0x81..=0x83).contains(&next_byte));
        let second_bc_bf = second(common.second_bc_bf, (0xbc..=0xbf).contains(&next_byte));
        let e3 = leads & common.e3;
        let kana = e3 & kana_second;
        let e3_punctuation = e3 & second_80;
        let han = (leads & common.han) | (e3 & !kana & !e3_punctuation);
        let cjk_punctuation = e3_punctuation | (leads & common.ef & second_bc_bf);
        self.counts[Script::Han as usize] += u64::from(han.count_ones());
        self.counts[Script::Kana as usize] += u64::from(kana.count_ones());
        self.counts[Script::CjkPunctuation as usize] += u64::from(cjk_punctuation.count_ones());

        let mut rest = leads & !han & !kana & !cjk_punctuation;
        while rest != 0 {
            let index = rest.trailing_zeros() as usize & (BLOCK_BYTES - 1);
            rest &= rest - 1;
            self.packed += LEAD_INCREMENT[usize::from(block[index] & 0x3f)];
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
    use super::super::classify::tests::classify_leads_plainly;
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
            script_counts.add_block(&block, &classify_leads_plainly(&block), 0x80, 1);
            let counts = script_counts.finish();
            let expected = script_of(bytes[0], bytes[1]) as usize;
            assert_eq!(counts[expected], 1, "U+{code_point:04X}");
            assert_eq!(counts.iter().sum::<u64>(), 1);
        }
    }

    #[test]
    fn only_two_lead_bytes_need_the_second_byte() {
        for lead in 0xc0..=0xffu8 {
            if lead == 0xe3 || lead == 0xef {
                continue;
            }
            let first = script_of(lead, 0x80);
            for second in 0x80..=0xbfu8 {
                assert_eq!(script_of(lead, second), first, "{lead:#x} {second:#x}");
            }
        }
    }

    #[test]
    fn a_character_split_across_blocks_is_counted_by_the_byte_after_the_block() {
        for (character, script) in [('の', Script::Kana), ('。', Script::CjkPunctuation)] {
            let mut buffer = [0u8; 4];
            let bytes = character.encode_utf8(&mut buffer).as_bytes();
            let mut block = [b'a'; BLOCK_BYTES];
            block[BLOCK_BYTES - 1] = bytes[0];
            let mut script_counts = ScriptCounts::default();
            let leads = 1 << (BLOCK_BYTES - 1);
            script_counts.add_block(&block, &classify_leads_plainly(&block), bytes[1], leads);
            let counts = script_counts.finish();
            assert_eq!(counts[script as usize], 1, "{character}");
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
