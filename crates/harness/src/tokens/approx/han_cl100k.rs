//! The ideographs that cl100k encodes as one token each.
//!
//! cl100k holds a token for a few hundred of the commonest ideographs; every other one costs
//! two or three tokens (its UTF-8 bytes, partly merged). Simplified Chinese is mostly made of
//! the former, Traditional Chinese far less, so one price per ideograph cannot fit both.
//! [`SINGLE_TOKEN_IDEOGRAPHS`] lists them, in code-point order, among the characters the
//! estimator counts as ideographs (U+3100–U+9FFF); [`is_single_token`] reads a bitmap built from
//! that list at compile time (4 KB).
//!
//! The list is generated from the exact vocabulary by the test
//! `the_single_token_ideographs_are_cl100k_s` (in `tests.rs` beside this file), which fails if
//! the list differs from what the vocabulary says and, with `CTXBED_BLESS=1`, rewrites it.

/// The ideographs the list may hold.
const FIRST: usize = 0x3100;
const LAST: usize = 0x9fff;

/// The bitmap covers 512 rows of 64 code points from U+3000, so that a row index masked with
/// 511 needs no bounds check; the rows from U+A000 on are empty.
const BASE: usize = 0x3000;
const WORDS: usize = 512;
const _: () = assert!(BASE <= FIRST && LAST < BASE + 64 * WORDS && BASE.is_multiple_of(64));

/// The ideographs (U+3100–U+9FFF) that cl100k encodes as one token, in code-point order.
pub(super) const SINGLE_TOKEN_IDEOGRAPHS: &str = "\
    一万三上下不与专业东两个中串为主么义之也书了事二\
    于五些交产享京人亿今介从他付代以们件价任份企优会\
    传但位体何余作你使例供価保信修倍值停像元先入全公\
    共关其具内円册再写出击分列则初利别到制前力功加务\
    动動包化北区十午华单南即历原去县参及友反发取变口\
    只可台右号司合同名后向否含听启告员周命和品哈商問\
    器四回因国图土在地场址型城基報場填增声处备复外多\
    大天失头女好如始子字存学安宋完定实审客家容密对导\
    将小少尔就局展山岁州工左已市布常平年并广序库应店\
    度建开异式引张当录形影径待後得微心必志态思性总息\
    您情意感成我或户所手打找技投报拉持指按换据排接推\
    提播支收改放政效数整文料断新方族无日时明易星是時\
    景更最月有服期木未本机权束条来板构析果查标样核格\
    案检模次款止正此步歳段每比民気水求江汽没治法注活\
    流海消清游源火点無然片版物特率环现球理生用由电男\
    画界番登的监目直相省看県真知码确示社票私种科秒称\
    移程稍税稿空立站章端笑符第等签简算管箱米类系素索\
    约级线组经结给络统编网置美老考者而联能自至色节英\
    藏行表装西要見见规视角解言計記話読计认议记论设证\
    评试话询该详语误说请读调象责败账货购费资起超路身\
    车转软载辑输达过运近还这进连述退送选通速造連道邮\
    部都配释里重量金钟钮链销错键长開間関门闭问间队阳\
    陆限院除雅集雷需非面音页项预频题额首验高黑";

/// Bit `c % 64` of word `(c - BASE) / 64` is set when code point `c` is in
/// [`SINGLE_TOKEN_IDEOGRAPHS`].
static SINGLE_TOKEN: [u64; WORDS] = bitmap(SINGLE_TOKEN_IDEOGRAPHS);

/// The bitmap of `characters`, each a three-byte character in `FIRST..=LAST`, in increasing
/// order (anything else fails the build).
const fn bitmap(characters: &str) -> [u64; WORDS] {
    let bytes = characters.as_bytes();
    let mut words = [0u64; WORDS];
    let mut index = 0;
    let mut previous = 0;
    while index < bytes.len() {
        assert!(index + 2 < bytes.len() && bytes[index] >> 4 == 0xe);
        let code_point = ((bytes[index] as usize & 0x0f) << 12)
            | ((bytes[index + 1] as usize & 0x3f) << 6)
            | (bytes[index + 2] as usize & 0x3f);
        assert!(FIRST <= code_point && code_point <= LAST && code_point > previous);
        words[(code_point - BASE) / 64] |= 1 << (code_point % 64);
        previous = code_point;
        index += 3;
    }
    words
}

/// 1 when the three-byte character whose bytes are the low three of `bytes` (little-endian:
/// the first byte lowest) is one token of cl100k, else 0. The character is an ideograph
/// (U+3100–U+9FFF); the fourth byte is ignored.
#[inline(always)]
pub(super) fn is_single_token(bytes: u32) -> u64 {
    // The row is the code point's bits 6 to 15: the first byte's low four bits, then the
    // second byte's six; the third byte's six are the bit in the row.
    let row = (((bytes & 0x0f) << 6) | ((bytes >> 8) & 0x3f)) as usize;
    let word = SINGLE_TOKEN[row.wrapping_sub(BASE / 64) % WORDS];
    (word >> ((bytes >> 16) & 0x3f)) & 1
}
