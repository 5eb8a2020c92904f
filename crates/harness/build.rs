//! Writes the rank tables of the o200k_base and cl100k_base vocabularies into `OUT_DIR`, in
//! the layout `src/tokens/bpe/table_format.rs` describes, from the vocabularies `bpe-openai`
//! carries. The harness counts with these compact tables (a few MiB each, read in place from
//! the binary) rather than with `bpe-openai`'s own structures (some 60 MiB per vocabulary
//! once deserialised), and gives the same counts (tests compare the two). Beside each table it
//! writes the characters byte-pair merging may start from whole (`src/tokens/bpe/atomic.rs`).

#[path = "src/tokens/bpe/table_format.rs"]
#[allow(dead_code)]
mod table_format;

#[path = "src/tokens/bpe/atomic_format.rs"]
#[allow(dead_code)]
mod atomic_format;

#[path = "src/tokens/bpe/atomic_find.rs"]
mod atomic_find;

use std::io::Write;
use std::path::PathBuf;

use table_format::{PAIR_WORDS, RANK_MASK, SLOT_BYTES, TABLE_MAGIC, head, slot_entry, token_hash};

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=src/tokens/bpe/table_format.rs");
    println!("cargo::rerun-if-changed=src/tokens/bpe/atomic_format.rs");
    println!("cargo::rerun-if-changed=src/tokens/bpe/atomic_find.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for (name, tokenizer) in [
        ("o200k_base", bpe_openai::o200k_base()),
        ("cl100k_base", bpe_openai::cl100k_base()),
    ] {
        write_table(&out.join(format!("{name}.ranks")), &tokenizer.bpe);
        write_atomic(&out.join(format!("{name}.atomic")), &tokenizer.bpe);
    }
}

/// The whole-character flags (`src/tokens/bpe/atomic.rs`), in the layout of
/// `atomic_format.rs`.
fn write_atomic(path: &std::path::Path, bpe: &bpe_openai::byte_pair_encoding::BytePairEncoding) {
    let tokens: Vec<&[u8]> = (0..bpe.num_tokens())
        .map(|rank| bpe.token_bytes(u32::try_from(rank).expect("ranks fit in u32")))
        .collect();
    let flags = atomic_find::find(&tokens);
    assert_eq!(flags.len(), atomic_format::FLAGS_BYTES);
    std::fs::write(path, flags).expect("OUT_DIR is writable");
}

fn write_table(path: &std::path::Path, bpe: &bpe_openai::byte_pair_encoding::BytePairEncoding) {
    let tokens = bpe.num_tokens();
    assert!(tokens < RANK_MASK as usize, "every rank fits in a slot");
    let slot_count = (tokens * 2).next_power_of_two();
    let mask = slot_count - 1;
    let mut starts = Vec::with_capacity(tokens + 1);
    let mut bytes = Vec::new();
    let mut slots = vec![[0u8; SLOT_BYTES]; slot_count];
    let mut pairs = vec![0u32; PAIR_WORDS];
    for rank in 0..tokens {
        let rank = u32::try_from(rank).expect("a vocabulary has fewer than 2^32 tokens");
        let token = bpe.token_bytes(rank);
        starts.push(u32::try_from(bytes.len()).expect("the byte area fits in u32"));
        bytes.extend_from_slice(token);
        let hash = token_hash(token);
        // Truncation is the point: the low bits pick the slot.
        let mut slot = hash as usize & mask;
        while slots[slot] != [0u8; SLOT_BYTES] {
            slot = (slot + 1) & mask;
        }
        let length = u32::try_from(token.len()).expect("a token's length fits");
        slots[slot][0..4].copy_from_slice(&slot_entry(rank, hash).to_le_bytes());
        slots[slot][4..8].copy_from_slice(&length.to_le_bytes());
        slots[slot][8..16].copy_from_slice(&head(token));
        if let [first, second] = *token {
            pairs[usize::from(first) * 256 + usize::from(second)] = rank + 1;
        }
    }
    starts.push(u32::try_from(bytes.len()).expect("the byte area fits in u32"));
    let mut file =
        std::io::BufWriter::new(std::fs::File::create(path).expect("OUT_DIR is writable"));
    let header = [
        TABLE_MAGIC,
        u32::try_from(tokens).expect("token count fits"),
        u32::try_from(slot_count).expect("slot count fits"),
    ];
    for word in header.iter().chain(&starts) {
        file.write_all(&word.to_le_bytes())
            .expect("OUT_DIR is writable");
    }
    for slot in &slots {
        file.write_all(slot).expect("OUT_DIR is writable");
    }
    for word in &pairs {
        file.write_all(&word.to_le_bytes())
            .expect("OUT_DIR is writable");
    }
    file.write_all(&bytes).expect("OUT_DIR is writable");
    file.flush().expect("OUT_DIR is writable");
}
