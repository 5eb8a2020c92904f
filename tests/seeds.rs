//! The seed sweep in `cargo test`, one test per block of seeds, so that any runner that picks
//! tests by name can spread a sweep: `cargo nextest run --test seeds --partition count:2/4` runs
//! every fourth block. `cargo test --test seeds -- --list` lists the blocks, named after their
//! first and last seed padded to the width of the range's last seed (`seeds/100-124` by
//! default), and `cargo test --test seeds seeds/100-124` runs one. Each seed is generated, run
//! twice and checked against every invariant, as `ctxbed sweep` does.
//!
//! - `CTXBED_SWEEP_SEEDS` — seeds in the range (default [`SEEDS_DEFAULT`]);
//! - `CTXBED_SWEEP_START` — the first seed (default 0);
//! - `CTXBED_SWEEP_BLOCK` — seeds per test (default [`BLOCK_DEFAULT`]).
//!
//! A value that is not a number is an error, not a silent default. Names are zero-padded, so
//! their order is the seeds' order and a partition by count is the same on every machine.

use ctxbed::sweep::check_seed;
use libtest_mimic::{Arguments, Failed, Trial};

/// The allocator of `ctxbed sweep`, so a block costs here what it costs there.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Seeds checked by default: about three seconds in a debug build on two cores.
const SEEDS_DEFAULT: u64 = 200;

/// Seeds per test by default: small enough for a partition to balance, large enough that a
/// test's start-up does not dominate.
const BLOCK_DEFAULT: u64 = 25;

/// The largest seed a scenario file can hold (its seed is a TOML integer, signed).
const SEED_MAX: u64 = i64::MAX as u64;

fn main() {
    let arguments = Arguments::from_args();
    let trials = match blocks() {
        Ok(trials) => trials,
        Err(message) => {
            eprintln!("error: {message}");
            std::process::exit(2);
        }
    };
    libtest_mimic::run(&arguments, trials).exit();
}

/// One trial per block of the configured range.
fn blocks() -> Result<Vec<Trial>, String> {
    let count = setting("CTXBED_SWEEP_SEEDS", SEEDS_DEFAULT)?;
    let start = setting("CTXBED_SWEEP_START", 0)?;
    let block = setting("CTXBED_SWEEP_BLOCK", BLOCK_DEFAULT)?;
    if block == 0 {
        return Err("CTXBED_SWEEP_BLOCK must be at least 1".to_string());
    }
    if count == 0 {
        return Err(
            "CTXBED_SWEEP_SEEDS must be at least 1 (a sweep of no seeds checks nothing)"
                .to_string(),
        );
    }
    let end = start
        .checked_add(count)
        .filter(|end| *end <= SEED_MAX)
        .ok_or_else(|| {
            format!("CTXBED_SWEEP_START + CTXBED_SWEEP_SEEDS must stay at or below {SEED_MAX}")
        })?;
    let width = end.saturating_sub(1).to_string().len();
    let mut trials = Vec::new();
    let mut first = start;
    while first < end {
        let last = first.saturating_add(block - 1).min(end - 1);
        let name = format!("seeds/{first:0width$}-{last:0width$}");
        trials.push(Trial::test(name, move || check_block(first, last)));
        first = last + 1;
    }
    Ok(trials)
}

/// An environment variable as a number, or `default` when it is unset.
fn setting(name: &str, default: u64) -> Result<u64, String> {
    match std::env::var(name) {
        Err(std::env::VarError::NotPresent) => Ok(default),
        Err(std::env::VarError::NotUnicode(value)) => {
            Err(format!("{name}={value:?} is not a number"))
        }
        Ok(value) => value
            .trim()
            .parse()
            .map_err(|_| format!("{name}={value:?} is not a number (e.g. {name}={default})")),
    }
}

/// Checks the seeds `first..=last`; a failure names each failing seed and how to rerun it.
fn check_block(first: u64, last: u64) -> Result<(), Failed> {
    let mut failures = Vec::new();
    for seed in first..=last {
        let violations = check_seed(seed);
        if !violations.is_empty() {
            let violations: Vec<String> = violations.iter().map(|v| v.to_string()).collect();
            failures.push(format!(
                "seed {seed}: {}\n  reproduce and shrink: cargo run --release -- sweep --seeds 1 --start {seed}",
                violations.join("; ")
            ));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n").into())
    }
}
