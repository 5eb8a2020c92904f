//! Byte classes of a 64-byte block as bit masks (bit `i` is byte `i`).
//!
//! A [`Classifier`] turns a block into masks. [`Baseline`] works on every target: sixteen bytes
//! at once with SSE2 on x86-64 (every x86-64 processor has it), eight at once with word-wide
//! arithmetic elsewhere. [`Avx2`] classifies thirty-two bytes at once; it exists only after
//! [`Avx2::detect`] found AVX2, POPCNT and BMI1 on the running processor. Every way gives the
//! same masks (tested against each other and against a plain per-byte reading), so counts
//! never depend on the machine.

/// Bytes per block.
pub(super) const BLOCK_BYTES: usize = 64;

/// The class masks of one block. Bytes outside the text belong to no class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Masks {
    /// ASCII letters.
    pub letter: u64,
    /// ASCII upper-case letters (also in `letter`).
    pub upper: u64,
    pub digit: u64,
    /// Spaces, tabs, vertical tabs and form feeds.
    pub space: u64,
    /// Line feeds and carriage returns.
    pub newline: u64,
    /// Every other ASCII byte: punctuation, symbols, control characters.
    pub punctuation: u64,
    /// Every byte of a non-ASCII character.
    pub high: u64,
    /// The first byte of a non-ASCII character.
    pub lead: u64,
    /// First bytes 0xe3 and 0xef, the two whose script depends on the second byte: only
    /// their blocks need [`LeadMasks`].
    pub lead_e3_ef: u64,
}

/// Masks for the commonest CJK characters, so they are counted without a table lookup.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct LeadMasks {
    /// Lead bytes 0xe4..=0xe9: CJK ideographs U+4000–U+9FFF.
    pub han: u64,
    /// Lead byte 0xe3: U+3000–U+3FFF (CJK punctuation, kana, more ideographs).
    pub e3: u64,
    /// Lead byte 0xef: U+F000–U+FFFF (full-width forms among them).
    pub ef: u64,
    /// Bytes 0x80: after 0xe3, CJK symbols and punctuation.
    pub second_80: u64,
    /// Bytes 0x81..=0x83: after 0xe3, hiragana and katakana.
    pub kana_second: u64,
    /// Bytes 0xbc..=0xbf: after 0xef, full-width forms.
    pub second_bc_bf: u64,
}

/// One way of classifying blocks. The scan is compiled once per way, so the calls inline.
pub(super) trait Classifier: Copy {
    /// The class masks of a whole block.
    fn masks(self, block: &[u8; BLOCK_BYTES]) -> Masks;
    /// The CJK lead and second-byte masks of a whole block.
    fn leads(self, block: &[u8; BLOCK_BYTES]) -> LeadMasks;
    /// The bytes of a whole block in `low..=high`, both non-ASCII (at least 0x80).
    fn between(self, block: &[u8; BLOCK_BYTES], low: u8, high: u8) -> u64;
}

/// Classifies a block with `classifier`; bytes outside `valid` belong to no class.
#[inline(always)]
pub(super) fn classify_with<C: Classifier>(
    classifier: C,
    block: &[u8; BLOCK_BYTES],
    valid: u64,
) -> Masks {
    let masks = classifier.masks(block);
    Masks {
        letter: masks.letter & valid,
        upper: masks.upper & valid,
        digit: masks.digit & valid,
        space: masks.space & valid,
        newline: masks.newline & valid,
        punctuation: masks.punctuation & valid,
        high: masks.high & valid,
        lead: masks.lead & valid,
        lead_e3_ef: masks.lead_e3_ef & valid,
    }
}

/// Classifies a block the baseline way; bytes outside `valid` belong to no class.
#[cfg(test)]
pub(super) fn classify(block: &[u8; BLOCK_BYTES], valid: u64) -> Masks {
    classify_with(Baseline, block, valid)
}

/// The way every target has: SSE2 on x86-64, word arithmetic elsewhere.
#[derive(Debug, Clone, Copy)]
pub(super) struct Baseline;

impl Classifier for Baseline {
    #[inline(always)]
    fn masks(self, block: &[u8; BLOCK_BYTES]) -> Masks {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        // SAFETY: `classify_sse2` only needs SSE2, and the `cfg` above compiles this call only
        // when SSE2 is enabled for the whole build (it is part of the x86-64 baseline).
        let masks = unsafe { classify_sse2(block) };
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
        let masks = words::classify_words(block);
        masks
    }

    #[inline(always)]
    fn leads(self, block: &[u8; BLOCK_BYTES]) -> LeadMasks {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        // SAFETY: as in `masks`: SSE2 is enabled for the whole build.
        let masks = unsafe { classify_leads_sse2(block) };
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
        let masks = words::classify_leads_words(block);
        masks
    }

    #[inline(always)]
    fn between(self, block: &[u8; BLOCK_BYTES], low: u8, high: u8) -> u64 {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        // SAFETY: as in `masks`: SSE2 is enabled for the whole build.
        let mask = unsafe { between_sse2(block, low, high) };
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
        let mask = words::between_words(block, low, high);
        mask
    }
}

/// Thirty-two bytes at a time. A value of this type proves that the running processor has
/// AVX2, POPCNT and BMI1: [`Avx2::detect`] is the only way to make one.
#[cfg(target_arch = "x86_64")]
#[derive(Debug, Clone, Copy)]
pub(super) struct Avx2 {
    _detected: (),
}

#[cfg(target_arch = "x86_64")]
impl Avx2 {
    /// The AVX2 classifier, when the running processor supports it.
    pub(super) fn detect() -> Option<Avx2> {
        let supported = std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("popcnt")
            && std::arch::is_x86_feature_detected!("bmi1");
        supported.then_some(Avx2 { _detected: () })
    }
}

#[cfg(target_arch = "x86_64")]
impl Classifier for Avx2 {
    #[inline(always)]
    fn masks(self, block: &[u8; BLOCK_BYTES]) -> Masks {
        // SAFETY: an `Avx2` value exists only when the processor has AVX2 (`Avx2::detect`).
        unsafe { classify_avx2(block) }
    }

    #[inline(always)]
    fn leads(self, block: &[u8; BLOCK_BYTES]) -> LeadMasks {
        // SAFETY: as in `masks`.
        unsafe { classify_leads_avx2(block) }
    }

    #[inline(always)]
    fn between(self, block: &[u8; BLOCK_BYTES], low: u8, high: u8) -> u64 {
        // SAFETY: as in `masks`.
        unsafe { between_avx2(block, low, high) }
    }
}

/// AVX2 has only "greater than" on signed bytes; these macros keep the range tests readable.
#[cfg(target_arch = "x86_64")]
macro_rules! splat {
    ($byte:expr) => {
        std::arch::x86_64::_mm256_set1_epi8($byte as u8 as i8)
    };
}

/// Signed bytes of `$vector` strictly between `$low` and `$high`.
#[cfg(target_arch = "x86_64")]
macro_rules! between {
    ($vector:expr, $low:expr, $high:expr) => {
        std::arch::x86_64::_mm256_and_si256(
            std::arch::x86_64::_mm256_cmpgt_epi8($vector, splat!($low)),
            std::arch::x86_64::_mm256_cmpgt_epi8(splat!($high), $vector),
        )
    };
}

/// Thirty-two bytes at a time, with the same signed comparisons as `classify_sse2`.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
fn classify_avx2(block: &[u8; BLOCK_BYTES]) -> Masks {
    use std::arch::x86_64::{
        _mm256_and_si256, _mm256_andnot_si256, _mm256_cmpeq_epi8, _mm256_cmpgt_epi8,
        _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_or_si256,
    };
    let (chunks, _) = block.as_chunks::<32>();
    // SAFETY: each chunk is 32 readable bytes, and `loadu` needs no alignment.
    let vectors =
        [&chunks[0], &chunks[1]].map(|chunk| unsafe { _mm256_loadu_si256(chunk.as_ptr().cast()) });
    let bits = |mask: i32, index: usize| u64::from(mask as u32) << (32 * index);
    let high =
        bits(_mm256_movemask_epi8(vectors[0]), 0) | bits(_mm256_movemask_epi8(vectors[1]), 1);
    // Lead bytes 0xc0..=0xff are -64..=-1: negative (high) and above -65 (0xbf). Both tests
    // stay in the vector so that one mask comes out; combining two extracted masks made the
    // compiler rebuild them bit by bit.
    let lead_of = |vector| {
        _mm256_movemask_epi8(_mm256_and_si256(
            vector,
            _mm256_cmpgt_epi8(vector, splat!(0xbf)),
        ))
    };
    let lead = bits(lead_of(vectors[0]), 0) | bits(lead_of(vectors[1]), 1);
    let e3_ef_of = |vector| {
        _mm256_movemask_epi8(_mm256_or_si256(
            _mm256_cmpeq_epi8(vector, splat!(0xe3)),
            _mm256_cmpeq_epi8(vector, splat!(0xef)),
        ))
    };
    let lead_e3_ef = bits(e3_ef_of(vectors[0]), 0) | bits(e3_ef_of(vectors[1]), 1);
    if high == u64::MAX {
        // No ASCII at all (much of CJK text): every other class is empty.
        return Masks {
            high,
            lead,
            lead_e3_ef,
            ..Masks::default()
        };
    }
    let mut masks = Masks::default();
    for (index, vector) in vectors.into_iter().enumerate() {
        let folded = _mm256_or_si256(vector, splat!(0x20));
        let letter = between!(folded, b'a' - 1, b'z' + 1);
        let upper = _mm256_and_si256(letter, _mm256_cmpgt_epi8(splat!(b'Z' + 1), vector));
        let digit = between!(vector, b'0' - 1, b'9' + 1);
        let newline = _mm256_or_si256(
            _mm256_cmpeq_epi8(vector, splat!(b'\n')),
            _mm256_cmpeq_epi8(vector, splat!(b'\r')),
        );
        let control_space = between!(vector, 0x08, 0x0d);
        let space = _mm256_andnot_si256(
            newline,
            _mm256_or_si256(_mm256_cmpeq_epi8(vector, splat!(b' ')), control_space),
        );
        let shift = 32 * index;
        masks.letter |= u64::from(_mm256_movemask_epi8(letter) as u32) << shift;
        masks.upper |= u64::from(_mm256_movemask_epi8(upper) as u32) << shift;
        masks.digit |= u64::from(_mm256_movemask_epi8(digit) as u32) << shift;
        masks.space |= u64::from(_mm256_movemask_epi8(space) as u32) << shift;
        masks.newline |= u64::from(_mm256_movemask_epi8(newline) as u32) << shift;
    }
    masks.high = high;
    masks.lead = lead;
    masks.lead_e3_ef = lead_e3_ef;
    masks.punctuation = !(masks.letter | masks.digit | masks.space | masks.newline | masks.high);
    masks
}

/// The CJK masks thirty-two bytes at a time: unsigned ranges as signed ones after flipping
/// the top bit.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
fn classify_leads_avx2(block: &[u8; BLOCK_BYTES]) -> LeadMasks {
    use std::arch::x86_64::{
        _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_xor_si256,
    };
    let (chunks, _) = block.as_chunks::<32>();
    let mut masks = LeadMasks::default();
    for (index, chunk) in chunks.iter().enumerate() {
        // SAFETY: `chunk` is 32 readable bytes, and `loadu` needs no alignment.
        let vector = unsafe { _mm256_loadu_si256(chunk.as_ptr().cast()) };
        let signed = _mm256_xor_si256(vector, splat!(0x80));
        let shift = 32 * index;
        let bits = |mask: i32| u64::from(mask as u32) << shift;
        // Flipped, 0xe4..=0xe9 is 0x64..=0x6a, 0x81..=0x83 is 0x01..=0x03, 0xbc..=0xbf is 0x3c..=0x3f.
        masks.han |= bits(_mm256_movemask_epi8(between!(signed, 0x63, 0x6a)));
        masks.e3 |= bits(_mm256_movemask_epi8(_mm256_cmpeq_epi8(
            vector,
            splat!(0xe3),
        )));
        masks.ef |= bits(_mm256_movemask_epi8(_mm256_cmpeq_epi8(
            vector,
            splat!(0xef),
        )));
        masks.second_80 |= bits(_mm256_movemask_epi8(_mm256_cmpeq_epi8(
            vector,
            splat!(0x80),
        )));
        masks.kana_second |= bits(_mm256_movemask_epi8(between!(signed, 0x00, 0x04)));
        masks.second_bc_bf |= bits(_mm256_movemask_epi8(between!(signed, 0x3b, 0x40)));
    }
    masks
}

/// Bytes in `low..=high` thirty-two at a time: unsigned bytes compared as signed ones after
/// flipping the top bit. "Above `high`" is tested rather than "below `high + 1`", which
/// overflows for 0xff.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
fn between_avx2(block: &[u8; BLOCK_BYTES], low: u8, high: u8) -> u64 {
    use std::arch::x86_64::{
        _mm256_andnot_si256, _mm256_cmpgt_epi8, _mm256_loadu_si256, _mm256_movemask_epi8,
        _mm256_xor_si256,
    };
    debug_assert!(0x80 <= low && low <= high);
    let (chunks, _) = block.as_chunks::<32>();
    let mut mask = 0;
    for (index, chunk) in chunks.iter().enumerate() {
        // SAFETY: `chunk` is 32 readable bytes, and `loadu` needs no alignment.
        let vector = unsafe { _mm256_loadu_si256(chunk.as_ptr().cast()) };
        let signed = _mm256_xor_si256(vector, splat!(0x80));
        // Flipped, `low` is at least 0x00, so `low - 1` does not wrap.
        let at_least_low = _mm256_cmpgt_epi8(signed, splat!((low ^ 0x80) as i8 - 1));
        let above_high = _mm256_cmpgt_epi8(signed, splat!(high ^ 0x80));
        let in_range = _mm256_andnot_si256(above_high, at_least_low);
        mask |= u64::from(_mm256_movemask_epi8(in_range) as u32) << (32 * index);
    }
    mask
}

/// Bytes in `low..=high` sixteen at a time, as `between_avx2` does.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[target_feature(enable = "sse2")]
fn between_sse2(block: &[u8; BLOCK_BYTES], low: u8, high: u8) -> u64 {
    use std::arch::x86_64::{
        _mm_andnot_si128, _mm_cmpgt_epi8, _mm_movemask_epi8, _mm_set_epi64x, _mm_set1_epi8,
        _mm_xor_si128,
    };
    debug_assert!(0x80 <= low && low <= high);
    let (chunks, _) = block.as_chunks::<16>();
    let mut mask = 0;
    for (index, chunk) in chunks.iter().enumerate() {
        let (halves, _) = chunk.as_chunks::<8>();
        let vector = _mm_set_epi64x(i64::from_le_bytes(halves[1]), i64::from_le_bytes(halves[0]));
        let signed = _mm_xor_si128(vector, _mm_set1_epi8(i8::MIN));
        let at_least_low = _mm_cmpgt_epi8(signed, _mm_set1_epi8((low ^ 0x80) as i8 - 1));
        let above_high = _mm_cmpgt_epi8(signed, _mm_set1_epi8((high ^ 0x80) as i8));
        let in_range = _mm_andnot_si128(above_high, at_least_low);
        mask |= u64::from(_mm_movemask_epi8(in_range) as u16) << (16 * index);
    }
    mask
}

/// Unsigned byte ranges as signed comparisons after flipping the top bit.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[target_feature(enable = "sse2")]
fn classify_leads_sse2(block: &[u8; BLOCK_BYTES]) -> LeadMasks {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cmpeq_epi8, _mm_cmpgt_epi8, _mm_cmplt_epi8, _mm_movemask_epi8,
        _mm_set_epi64x, _mm_set1_epi8, _mm_xor_si128,
    };
    let flipped = |byte: u8| (byte ^ 0x80) as i8;
    let (chunks, _) = block.as_chunks::<16>();
    let mut masks = LeadMasks::default();
    for (index, chunk) in chunks.iter().enumerate() {
        let (halves, _) = chunk.as_chunks::<8>();
        let vector = _mm_set_epi64x(i64::from_le_bytes(halves[1]), i64::from_le_bytes(halves[0]));
        let signed = _mm_xor_si128(vector, _mm_set1_epi8(i8::MIN));
        let in_range = |low: u8, high: u8| -> __m128i {
            _mm_and_si128(
                _mm_cmpgt_epi8(signed, _mm_set1_epi8(flipped(low) - 1)),
                _mm_cmplt_epi8(signed, _mm_set1_epi8(flipped(high) + 1)),
            )
        };
        let bits = |mask: __m128i| u64::from(_mm_movemask_epi8(mask) as u16) << (16 * index);
        masks.han |= bits(in_range(0xe4, 0xe9));
        masks.e3 |= bits(_mm_cmpeq_epi8(vector, _mm_set1_epi8(0xe3_u8 as i8)));
        masks.ef |= bits(_mm_cmpeq_epi8(vector, _mm_set1_epi8(0xef_u8 as i8)));
        masks.second_80 |= bits(_mm_cmpeq_epi8(vector, _mm_set1_epi8(0x80_u8 as i8)));
        masks.kana_second |= bits(in_range(0x81, 0x83));
        masks.second_bc_bf |= bits(in_range(0xbc, 0xbf));
    }
    masks
}

/// Sixteen bytes at a time. Signed byte comparisons: non-ASCII bytes are negative, so every
/// ASCII range test excludes them without a separate mask.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[target_feature(enable = "sse2")]
fn classify_sse2(block: &[u8; BLOCK_BYTES]) -> Masks {
    use std::arch::x86_64::{
        _mm_and_si128, _mm_andnot_si128, _mm_cmpeq_epi8, _mm_cmpgt_epi8, _mm_cmplt_epi8,
        _mm_movemask_epi8, _mm_or_si128, _mm_set_epi64x, _mm_set1_epi8,
    };
    let (chunks, _) = block.as_chunks::<16>();
    let mut masks = Masks::default();
    for (index, chunk) in chunks.iter().enumerate() {
        let (halves, _) = chunk.as_chunks::<8>();
        let vector = _mm_set_epi64x(i64::from_le_bytes(halves[1]), i64::from_le_bytes(halves[0]));
        let folded = _mm_or_si128(vector, _mm_set1_epi8(0x20));
        let letter = _mm_and_si128(
            _mm_cmpgt_epi8(folded, _mm_set1_epi8(b'a' as i8 - 1)),
            _mm_cmplt_epi8(folded, _mm_set1_epi8(b'z' as i8 + 1)),
        );
        let upper = _mm_and_si128(
            letter,
            _mm_cmplt_epi8(vector, _mm_set1_epi8(b'Z' as i8 + 1)),
        );
        let digit = _mm_and_si128(
            _mm_cmpgt_epi8(vector, _mm_set1_epi8(b'0' as i8 - 1)),
            _mm_cmplt_epi8(vector, _mm_set1_epi8(b'9' as i8 + 1)),
        );
        let newline = _mm_or_si128(
            _mm_cmpeq_epi8(vector, _mm_set1_epi8(b'\n' as i8)),
            _mm_cmpeq_epi8(vector, _mm_set1_epi8(b'\r' as i8)),
        );
        let control_space = _mm_and_si128(
            _mm_cmpgt_epi8(vector, _mm_set1_epi8(0x08)),
            _mm_cmplt_epi8(vector, _mm_set1_epi8(0x0d)),
        );
        let space = _mm_andnot_si128(
            newline,
            _mm_or_si128(
                _mm_cmpeq_epi8(vector, _mm_set1_epi8(b' ' as i8)),
                control_space,
            ),
        );
        // 0xc0..=0xff are -64..=-1; bytes above -65 are leads or ASCII.
        let not_continuation = _mm_cmpgt_epi8(vector, _mm_set1_epi8(-65));
        let bits = |mask: i32| u64::from(mask as u16) << (16 * index);
        let high = bits(_mm_movemask_epi8(vector));
        masks.letter |= bits(_mm_movemask_epi8(letter));
        masks.upper |= bits(_mm_movemask_epi8(upper));
        masks.digit |= bits(_mm_movemask_epi8(digit));
        masks.space |= bits(_mm_movemask_epi8(space));
        masks.newline |= bits(_mm_movemask_epi8(newline));
        masks.high |= high;
        // Both tests in the vector: one extracted mask (see `classify_avx2`).
        masks.lead |= bits(_mm_movemask_epi8(_mm_and_si128(vector, not_continuation)));
        let e3_ef = _mm_or_si128(
            _mm_cmpeq_epi8(vector, _mm_set1_epi8(0xe3_u8 as i8)),
            _mm_cmpeq_epi8(vector, _mm_set1_epi8(0xef_u8 as i8)),
        );
        masks.lead_e3_ef |= bits(_mm_movemask_epi8(e3_ef));
    }
    masks.punctuation = !(masks.letter | masks.digit | masks.space | masks.newline | masks.high);
    masks
}

/// The portable path, compiled everywhere so tests compare it with SSE2 on x86-64.
#[cfg_attr(
    all(target_arch = "x86_64", target_feature = "sse2", not(test)),
    expect(dead_code, reason = "x86-64 classifies with SSE2")
)]
mod words {
    use super::{BLOCK_BYTES, Masks};

    const LANES_LOW: u64 = 0x0101_0101_0101_0101;
    const LANES_HIGH: u64 = 0x8080_8080_8080_8080;

    const fn lanes(byte: u8) -> u64 {
        LANES_LOW * byte as u64
    }

    /// High bit set in each lane whose 7-bit value is at least `threshold` (at most 0x80).
    /// No lane carries into the next: 0x7f + 0x80 fits in a byte.
    fn lanes_at_least(value7: u64, threshold: u8) -> u64 {
        value7.wrapping_add(lanes(0x80 - threshold)) & LANES_HIGH
    }

    /// High bit set in each lane whose 7-bit value equals `byte`.
    fn lanes_equal(value7: u64, byte: u8) -> u64 {
        !(value7 ^ lanes(byte)).wrapping_add(lanes(0x7f)) & LANES_HIGH
    }

    /// Gathers the high bit of each lane into the low 8 bits, lane `i` to bit `i`.
    fn lanes_to_bits(flags: u64) -> u64 {
        (flags >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56
    }

    /// Eight bytes at a time with word-wide arithmetic on 7-bit lanes; any target.
    pub(super) fn classify_words(block: &[u8; BLOCK_BYTES]) -> Masks {
        let (words, _) = block.as_chunks::<8>();
        let mut masks = Masks::default();
        for (index, word) in words.iter().enumerate() {
            let x = u64::from_le_bytes(*word);
            let ascii = !x & LANES_HIGH;
            let value7 = x & !LANES_HIGH;
            let folded = value7 | lanes(0x20);
            let letter = lanes_at_least(folded, b'a') & !lanes_at_least(folded, b'z' + 1) & ascii;
            // Upper case has bit 5 clear; `x << 2` moves bit 5 of each byte to its bit 7.
            let upper = letter & !(x << 2);
            let digit = lanes_at_least(value7, b'0') & !lanes_at_least(value7, b'9' + 1) & ascii;
            let newline = (lanes_equal(value7, b'\n') | lanes_equal(value7, b'\r')) & ascii;
            let control_space = lanes_at_least(value7, 0x09) & !lanes_at_least(value7, 0x0d);
            let space = (lanes_equal(value7, b' ') | control_space) & ascii & !newline;
            let high = x & LANES_HIGH;
            // Lead bytes are 11xxxxxx; `x << 1` moves bit 6 to bit 7.
            let lead = high & (x << 1);
            let shift = 8 * index;
            masks.letter |= lanes_to_bits(letter) << shift;
            masks.upper |= lanes_to_bits(upper) << shift;
            masks.digit |= lanes_to_bits(digit) << shift;
            masks.space |= lanes_to_bits(space) << shift;
            masks.newline |= lanes_to_bits(newline) << shift;
            masks.high |= lanes_to_bits(high) << shift;
            masks.lead |= lanes_to_bits(lead) << shift;
            let e3_ef = lanes_high_in(x, 0xe3, 0xe3) | lanes_high_in(x, 0xef, 0xef);
            masks.lead_e3_ef |= lanes_to_bits(e3_ef) << shift;
        }
        masks.punctuation =
            !(masks.letter | masks.digit | masks.space | masks.newline | masks.high);
        masks
    }

    /// Lanes of non-ASCII bytes in `low..=high` (both at least 0x80).
    fn lanes_high_in(x: u64, low: u8, high: u8) -> u64 {
        let value7 = x & !LANES_HIGH;
        let in_range = lanes_at_least(value7, low - 0x80) & !lanes_at_least(value7, high - 0x7f);
        in_range & x
    }

    /// The bytes in `low..=high` (both at least 0x80) eight at a time.
    pub(super) fn between_words(block: &[u8; BLOCK_BYTES], low: u8, high: u8) -> u64 {
        let (words, _) = block.as_chunks::<8>();
        let mut mask = 0;
        for (index, word) in words.iter().enumerate() {
            let x = u64::from_le_bytes(*word);
            mask |= lanes_to_bits(lanes_high_in(x, low, high)) << (8 * index);
        }
        mask
    }

    /// The CJK lead masks eight bytes at a time.
    pub(in super::super) fn classify_leads_words(block: &[u8; BLOCK_BYTES]) -> super::LeadMasks {
        let (words, _) = block.as_chunks::<8>();
        let mut masks = super::LeadMasks::default();
        for (index, word) in words.iter().enumerate() {
            let x = u64::from_le_bytes(*word);
            let shift = 8 * index;
            masks.han |= lanes_to_bits(lanes_high_in(x, 0xe4, 0xe9)) << shift;
            masks.e3 |= lanes_to_bits(lanes_high_in(x, 0xe3, 0xe3)) << shift;
            masks.ef |= lanes_to_bits(lanes_high_in(x, 0xef, 0xef)) << shift;
            masks.second_80 |= lanes_to_bits(lanes_high_in(x, 0x80, 0x80)) << shift;
            masks.kana_second |= lanes_to_bits(lanes_high_in(x, 0x81, 0x83)) << shift;
            masks.second_bc_bf |= lanes_to_bits(lanes_high_in(x, 0xbc, 0xbf)) << shift;
        }
        masks
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::words::{between_words, classify_leads_words, classify_words};
    use super::*;

    /// The CJK masks read one byte at a time.
    pub(in crate::tokens::approx) fn classify_leads_plainly(
        block: &[u8; BLOCK_BYTES],
    ) -> LeadMasks {
        let mut masks = LeadMasks::default();
        for (index, &byte) in block.iter().enumerate() {
            let bit = 1u64 << index;
            match byte {
                0xe4..=0xe9 => masks.han |= bit,
                0xe3 => masks.e3 |= bit,
                0xef => masks.ef |= bit,
                0x80 => masks.second_80 |= bit,
                0x81..=0x83 => masks.kana_second |= bit,
                0xbc..=0xbf => masks.second_bc_bf |= bit,
                _ => {}
            }
        }
        masks
    }

    /// The classes read one byte at a time (text of at most 64 bytes).
    pub(in crate::tokens::approx) fn classify_plainly(bytes: &[u8]) -> Masks {
        assert!(bytes.len() <= BLOCK_BYTES);
        let mut masks = Masks::default();
        for (index, &byte) in bytes.iter().enumerate() {
            let bit = 1u64 << index;
            match byte {
                b'a'..=b'z' => masks.letter |= bit,
                b'A'..=b'Z' => {
                    masks.letter |= bit;
                    masks.upper |= bit;
                }
                b'0'..=b'9' => masks.digit |= bit,
                b'\n' | b'\r' => masks.newline |= bit,
                b' ' | b'\t' | 0x0b | 0x0c => masks.space |= bit,
                0x80..=0xbf => masks.high |= bit,
                0xe3 | 0xef => {
                    masks.high |= bit;
                    masks.lead |= bit;
                    masks.lead_e3_ef |= bit;
                }
                0xc0..=0xff => {
                    masks.high |= bit;
                    masks.lead |= bit;
                }
                _ => masks.punctuation |= bit,
            }
        }
        masks
    }

    fn every_byte_value() -> impl Iterator<Item = [u8; BLOCK_BYTES]> {
        (0..4).map(|quarter| {
            let mut block = [0u8; BLOCK_BYTES];
            for (index, byte) in block.iter_mut().enumerate() {
                *byte = (quarter * BLOCK_BYTES + index) as u8;
            }
            block
        })
    }

    #[test]
    fn classification_matches_the_plain_reading_for_every_byte() {
        for block in every_byte_value() {
            check_every_way(&block);
        }
    }

    /// Every classifier this machine can run gives the plain reading's masks.
    fn check_every_way(block: &[u8; BLOCK_BYTES]) {
        assert_eq!(classify(block, u64::MAX), classify_plainly(block));
        assert_eq!(classify_words(block), classify_plainly(block));
        assert_eq!(Baseline.leads(block), classify_leads_plainly(block));
        assert_eq!(classify_leads_words(block), classify_leads_plainly(block));
        #[cfg(target_arch = "x86_64")]
        if let Some(avx2) = Avx2::detect() {
            assert_eq!(avx2.masks(block), classify_plainly(block));
            assert_eq!(avx2.leads(block), classify_leads_plainly(block));
        }
    }

    /// Bytes in `low..=high` read one at a time.
    fn between_plainly(block: &[u8; BLOCK_BYTES], low: u8, high: u8) -> u64 {
        let mut mask = 0;
        for (index, &byte) in block.iter().enumerate() {
            if (low..=high).contains(&byte) {
                mask |= 1 << index;
            }
        }
        mask
    }

    #[test]
    fn ranges_match_the_plain_reading_for_every_byte_and_bound() {
        let all_high_ranges =
            (0x80..=0xffu8).flat_map(|low| (low..=0xff).map(move |high| (low, high)));
        for (low, high) in all_high_ranges {
            for block in every_byte_value() {
                let plain = between_plainly(&block, low, high);
                assert_eq!(
                    Baseline.between(&block, low, high),
                    plain,
                    "{low:#x}..={high:#x}"
                );
                assert_eq!(
                    between_words(&block, low, high),
                    plain,
                    "{low:#x}..={high:#x}"
                );
                #[cfg(target_arch = "x86_64")]
                if let Some(avx2) = Avx2::detect() {
                    assert_eq!(
                        avx2.between(&block, low, high),
                        plain,
                        "{low:#x}..={high:#x}"
                    );
                }
            }
        }
    }

    #[test]
    fn classification_is_positional() {
        // Each byte value at each position, in a block of otherwise different bytes.
        for value in 0..=255u8 {
            for position in [0, 7, 8, 15, 16, 31, 32, 47, 63] {
                let mut block = [b'a'; BLOCK_BYTES];
                block[position] = value;
                check_every_way(&block);
            }
        }
    }

    #[test]
    fn bytes_outside_the_valid_range_belong_to_no_class() {
        let mut block = [0u8; BLOCK_BYTES];
        block[..3].copy_from_slice(b"a1 ");
        assert_eq!(classify(&block, 0b111), classify_plainly(b"a1 "));
    }
}
