//! The script of each non-ASCII character, from its first two bytes.
//!
//! [`script_of`] is the readable rule. Only two lead bytes need the second byte: 0xe3 (CJK
//! punctuation, kana or ideographs) and 0xef (full-width forms or not). Those, and the
//! ideographs, are counted a block at a time from byte masks ([`LeadMasks`]): most of CJK text
//! costs a few population counts per block. Every other character's script follows from its
//! lead byte alone, from a 64-entry table built at compile time from the rule, and the lead
//! bytes of one script form a few contiguous runs ([`LEAD_RUN`]). The rest of a block is
//! therefore counted a run at a time: one range mask and one population count for each run
//! present in the block, usually one or two, however many characters it holds. (Visiting the
//! characters one by one took half as many instructions again on the mixed-script corpus,
//! and its loop exits were mispredicted.)
//!
//! Two counts look further, for vocabularies that hold few tokens of a script. Cyrillic
//! letters outside the basic Russian alphabet ([`ScriptTotals::cyrillic_extended`]) need the
//! second byte of leads 0xd0 and 0xd1, three range masks more per block that holds Cyrillic.
//! Ideographs that are not one token of cl100k ([`ScriptTotals::han_rare`]) need the whole code
//! point, looked up in a bitmap one ideograph at a time (`han_cl100k`); only a scan asked for
//! them ([`ScriptCounts::new`]) does that work.

use super::classify::{BLOCK_BYTES, Classifier, LeadMasks};
use super::han_cl100k;

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

/// `LEAD_RUN[lead & 0x3f]`: the widest range of lead bytes around `lead` that `LEAD_TABLE`
/// gives the same script, so one range test counts every character of the run.
static LEAD_RUN: [(u8, u8); 64] = {
    let mut runs = [(0u8, 0u8); 64];
    let mut index = 0;
    while index < 64 {
        let script = LEAD_TABLE[index] as u8;
        let (mut low, mut high) = (index, index);
        while low > 0 && LEAD_TABLE[low - 1] as u8 == script {
            low -= 1;
        }
        while high < 63 && LEAD_TABLE[high + 1] as u8 == script {
            high += 1;
        }
        runs[index] = (0xc0 | low as u8, 0xc0 | high as u8);
        index += 1;
    }
    runs
};

/// What [`ScriptCounts`] counted in one text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct ScriptTotals {
    /// Characters per script, indexed by `Script as usize`.
    pub by_script: [u64; SCRIPT_COUNT],
    /// Cyrillic characters outside U+0410–U+044F (among `Script::Cyrillic`).
    pub cyrillic_extended: u64,
    /// Ideographs that are not one token of cl100k (among `Script::Han`); zero unless asked for.
    pub han_rare: u64,
}

/// Per-script character counts of one text.
#[derive(Debug, Default)]
pub(super) struct ScriptCounts {
    totals: ScriptTotals,
    /// Whether to look ideographs up in the cl100k table.
    han_rare: bool,
}

impl ScriptCounts {
    /// Counts for one text; `han_rare` asks for [`ScriptTotals::han_rare`] too.
    pub(super) fn new(han_rare: bool) -> Self {
        ScriptCounts {
            totals: ScriptTotals::default(),
            han_rare,
        }
    }

    /// Counts the characters whose first byte is in `leads` (bit `i` is byte `i` of `block`;
    /// `common` are the block's CJK masks; `after` are the two bytes that follow the block,
    /// 0x80 past the end of the text).
    #[inline(always)]
    pub(super) fn add_block<C: Classifier>(
        &mut self,
        classifier: C,
        block: &[u8; BLOCK_BYTES],
        common: &LeadMasks,
        after: [u8; 2],
        leads: u64,
    ) {
        let next_byte = after[0];
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
        let counts = &mut self.totals.by_script;
        counts[Script::Han as usize] += u64::from(han.count_ones());
        counts[Script::Kana as usize] += u64::from(kana.count_ones());
        counts[Script::CjkPunctuation as usize] += u64::from(cjk_punctuation.count_ones());
        if self.han_rare && han != 0 {
            self.totals.han_rare += rare_ideographs(block, after, han);
        }

        self.add_runs(
            classifier,
            block,
            after,
            leads & !han & !kana & !cjk_punctuation,
        );
    }

    /// Counts the characters whose first byte is in `leads`, none of them counted by the CJK
    /// masks, a run of lead bytes of one script at a time: most blocks hold one or two.
    /// `after` are the two bytes that follow the block (0x80 past the end of the text).
    #[inline(always)]
    pub(super) fn add_runs<C: Classifier>(
        &mut self,
        classifier: C,
        block: &[u8; BLOCK_BYTES],
        after: [u8; 2],
        leads: u64,
    ) {
        let mut rest = leads;
        while rest != 0 {
            let lead = block[rest.trailing_zeros() as usize & (BLOCK_BYTES - 1)];
            let (low, high) = LEAD_RUN[usize::from(lead & 0x3f)];
            let run = rest & classifier.between(block, low, high);
            rest &= !run;
            let script = LEAD_TABLE[usize::from(lead & 0x3f)];
            self.totals.by_script[script as usize] += u64::from(run.count_ones());
            match script {
                Script::Cyrillic => {
                    self.totals.cyrillic_extended +=
                        cyrillic_extended(classifier, block, after[0], run);
                }
                Script::Han if self.han_rare => {
                    self.totals.han_rare += rare_ideographs(block, after, run);
                }
                _ => {}
            }
        }
    }

    /// What was counted.
    pub(super) fn finish(self) -> ScriptTotals {
        self.totals
    }
}

/// Of the Cyrillic characters whose lead bytes are `run`, those outside U+0410–U+044F: every
/// character after leads 0xd2–0xd4, after 0xd0 those below U+0410 (second byte below 0x90),
/// after 0xd1 those from U+0450 (second byte 0x90 or above).
#[inline(always)]
fn cyrillic_extended<C: Classifier>(
    classifier: C,
    block: &[u8; BLOCK_BYTES],
    next_byte: u8,
    run: u64,
) -> u64 {
    let d0 = run & classifier.between(block, 0xd0, 0xd0);
    let d1 = run & classifier.between(block, 0xd1, 0xd1);
    // Bit `i` is set when byte `i + 1`, the second byte of a character at `i`, is 0x90..=0xbf.
    let second_high = (classifier.between(block, 0x90, 0xbf) >> 1)
        | (u64::from((0x90..=0xbf).contains(&next_byte)) << 63);
    let extended = (run & !d0 & !d1) | (d0 & !second_high) | (d1 & second_high);
    u64::from(extended.count_ones())
}

/// Of the ideographs whose lead bytes are `han`, those that are not one token of cl100k.
/// Every one is three bytes; `after` holds the bytes of one that ends past the block.
#[inline(always)]
fn rare_ideographs(block: &[u8; BLOCK_BYTES], after: [u8; 2], han: u64) -> u64 {
    // The block and what follows, so that four bytes can be read from any position.
    let mut window = [0u8; BLOCK_BYTES + 4];
    window[..BLOCK_BYTES].copy_from_slice(block);
    window[BLOCK_BYTES..BLOCK_BYTES + 2].copy_from_slice(&after);
    let mut single = 0;
    let mut rest = han;
    while rest != 0 {
        let at = rest.trailing_zeros() as usize & (BLOCK_BYTES - 1);
        rest &= rest - 1;
        let bytes = [window[at], window[at + 1], window[at + 2], window[at + 3]];
        single += han_cl100k::is_single_token(u32::from_le_bytes(bytes));
    }
    u64::from(han.count_ones()) - single
}

#[cfg(test)]
mod tests {
    use super::super::classify::Baseline;
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
            let common = classify_leads_plainly(&block);
            script_counts.add_block(Baseline, &block, &common, [0x80; 2], 1);
            let counts = script_counts.finish().by_script;
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
    fn dense_blocks_count_by_runs_as_the_rule_says() {
        let characters = [
            'a', ' ', '我', 'の', '한', '。', '，', 'é', 'λ', 'Ж', 'ש', 'م', 'մ', 'म', '—', '«',
            'ა', '🎉', '\u{c0}', '\u{ee00}', '\u{ef00}', '\u{3400}',
        ];
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for round in 0..500 {
            // Some rounds draw from only a few characters, so most blocks hold long runs.
            let palette = if round % 2 == 0 { 3 } else { characters.len() };
            let offset = round % characters.len();
            let (mut block, mut leads, mut expected) =
                ([b'a'; BLOCK_BYTES], 0u64, [0u64; SCRIPT_COUNT]);
            let mut length = 0;
            loop {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let character =
                    characters[(offset + (state % palette as u64) as usize) % characters.len()];
                let mut buffer = [0u8; 4];
                let bytes = character.encode_utf8(&mut buffer).as_bytes();
                if length + bytes.len() > BLOCK_BYTES {
                    break;
                }
                block[length..length + bytes.len()].copy_from_slice(bytes);
                if bytes.len() > 1 {
                    leads |= 1 << length;
                    expected[script_of(bytes[0], bytes[1]) as usize] += 1;
                }
                length += bytes.len();
            }
            let check = |counts: [u64; SCRIPT_COUNT], way: &str| {
                assert_eq!(counts, expected, "round {round} with {way}: {block:x?}");
            };
            let mut script_counts = ScriptCounts::default();
            script_counts.add_block(
                Baseline,
                &block,
                &classify_leads_plainly(&block),
                [0x80; 2],
                leads,
            );
            check(script_counts.finish().by_script, "the baseline");
            #[cfg(target_arch = "x86_64")]
            if let Some(avx2) = super::super::classify::Avx2::detect() {
                let mut script_counts = ScriptCounts::default();
                let common = classify_leads_plainly(&block);
                script_counts.add_block(avx2, &block, &common, [0x80; 2], leads);
                check(script_counts.finish().by_script, "AVX2");
            }
        }
    }

    #[test]
    fn runs_hold_one_script_and_every_lead_of_it_nearby() {
        for index in 0..64 {
            let (low, high) = LEAD_RUN[index];
            let script = LEAD_TABLE[index];
            assert!(low <= 0xc0 | index as u8 && 0xc0 | index as u8 <= high);
            for lead in low..=high {
                assert_eq!(LEAD_TABLE[usize::from(lead & 0x3f)], script, "{lead:#x}");
            }
            if low > 0xc0 {
                assert_ne!(LEAD_TABLE[usize::from((low - 1) & 0x3f)], script);
            }
            if high < 0xff {
                assert_ne!(LEAD_TABLE[usize::from((high + 1) & 0x3f)], script);
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
            script_counts.add_block(
                Baseline,
                &block,
                &classify_leads_plainly(&block),
                [bytes[1], bytes[2]],
                leads,
            );
            let counts = script_counts.finish().by_script;
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
