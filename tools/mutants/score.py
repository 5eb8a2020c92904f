#!/usr/bin/env python3
"""The mutation score of the harness's pipeline, per directory, from cargo-mutants' outcomes.

Runs `cargo mutants` over one directory of `crates/harness/src/` at a time (or reads runs
already made) and prints, per directory: mutants, caught, timed out, missed, unviable, and the
score, (caught + timed out) / (caught + timed out + missed). A missed mutant listed in
`tools/mutants/equivalent.toml` (with why it cannot be told apart from the code) is counted
apart and shown; every other one is printed, so a reader sees what no test notices.

    tools/mutants/score.py run context compaction tokens   # slow: about 8 s a mutant
    tools/mutants/score.py run --shard 0/4 tokens          # a part (k counts from 0); `show` reads the parts together
    tools/mutants/score.py run tokens/bpe                  # a sub-directory (or one `.rs` file)
    tools/mutants/score.py run --iterate compaction        # again, only what was not caught
    tools/mutants/score.py run --untested tokens/bpe       # the rest of an interrupted run
    tools/mutants/score.py show context compaction tokens  # from target/mutants/<dir>/

Each run works in place in a checkout of its own (`--in-place` mutates the sources it is given;
do not edit them meanwhile) with the harness package's own tests, the unit, integration and
doc tests of `ctxbed-harness`, built with the workspace's `mutants` profile (optimised, so the
tokenizer's exhaustive tests take seconds): a mutant only the root package's scenario goldens
would notice counts as missed here. `--unit-only` runs the unit tests alone (no integration or
doc tests to build and run: about twice as fast), which can only lower a score; `tokens/` is
scored that way, its unit tests being where its exact values are pinned. Standard library only
(Python 3.11: tomllib).
"""

import argparse
import json
import pathlib
import subprocess
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "target" / "mutants"
EQUIVALENT = ROOT / "tools" / "mutants" / "equivalent.toml"


def files(directory: str) -> list[str]:
    """cargo-mutants' `--file` arguments for a directory of the harness (with its module file),
    or for one file when `directory` names a `.rs` file."""
    if directory.endswith(".rs"):
        return ["--file", f"crates/harness/src/{directory}"]
    return [
        "--file", f"crates/harness/src/{directory}/**/*.rs",
        "--file", f"crates/harness/src/{directory}.rs",
    ]


def current(directory: str) -> list[str]:
    """The directory's mutants as the sources stand now (`cargo mutants --list`)."""
    command = ["cargo", "mutants", "--list", "--package", "ctxbed-harness", *files(directory)]
    listed = subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True)
    return [line.strip() for line in listed.stdout.splitlines() if line.strip()]


def run(
    directory: str, timeout: int, shard: str | None, iterate: bool, unit_only: bool,
    skip: list[str], untested: bool = False,
) -> None:
    """Runs cargo-mutants over `crates/harness/src/<directory>` (and `<directory>.rs`), or one
    shard `k/n` of its mutants (the shards' outcomes are read together), or (`untested`) the
    mutants no run over the directory has an outcome for (an interrupted run's rest)."""
    if untested:
        out = place(directory) / "untested"
    else:
        out = place(directory) / (f"shard-{shard.replace('/', '-of-')}" if shard else "all")
    out.mkdir(parents=True, exist_ok=True)
    command = [
        "cargo", "mutants", "--in-place", "--package", "ctxbed-harness",
        *files(directory),
        "--profile", "mutants", "--timeout", str(timeout), "--output", str(out),
    ]
    if untested:
        keep_ledger(out)
        # Every run's outcomes count (a run over a parent directory covers these mutants too).
        done = set()
        for path in OUT.rglob("*"):
            if (path / "mutants.out").is_dir() or (path / "ledger.json").exists():
                done.update(read_run(path))
        rest = [name for name in current(directory) if name not in done]
        if not rest:
            print(f"{directory}: every mutant has an outcome", flush=True)
            return
        command += ["--re", "^(?:" + "|".join(map(escape, rest)) + ")$"]
    elif iterate:
        # Only this run's survivors, by name: cargo-mutants' own `--iterate` drops what this
        # output caught and then shards the rest, which would test other shards' mutants and
        # only part of these.
        keep_ledger(out)
        judged = equivalent()
        survivors = [
            name for name, summary in read_run(out).items()
            if summary == "MissedMutant" and name not in judged
        ]
        if not survivors:
            print(f"{out}: no survivor to test again", flush=True)
            return
        command += ["--re", "^(?:" + "|".join(map(escape, sorted(survivors))) + ")$"]
    elif shard:
        command += ["--shard", shard]
    if unit_only:
        command.append("--cargo-arg=--lib")  # the build and the tests
    if skip:
        command += ["--", "--"]
        for prefix in skip:
            command += ["--skip", prefix]
    print("$", " ".join(command), flush=True)
    # cargo-mutants exits 2 when some mutants were missed: the table says which.
    status = subprocess.run(command, cwd=ROOT, check=False).returncode
    if status not in (0, 2, 3):
        sys.exit(f"cargo mutants over {directory} failed with status {status}")


def escape(name: str) -> str:
    """`name` as a literal in a Rust regex (the crate escapes any ASCII punctuation)."""
    return "".join("\\" + c if c in "\\.+*?()|[]{}^$#&-~" else c for c in name)


def place(directory: str) -> pathlib.Path:
    """Where a run over `directory` keeps its outcomes: under its directory's folder, so that
    `show` over a directory reads the runs over its parts (`tokens/bpe`, `tokens.rs`) too."""
    return OUT / directory.removesuffix(".rs")


def equivalent() -> dict[str, str]:
    """Each mutant judged equivalent (as cargo-mutants names it) with the reason."""
    if not EQUIVALENT.exists():
        return {}
    with EQUIVALENT.open("rb") as file:
        table = tomllib.load(file)
    entries = table.get("equivalent", [])
    judged = {entry["mutant"]: entry["why"] for entry in entries}
    if len(judged) != len(entries):
        twice = sorted({e["mutant"] for e in entries if sum(f["mutant"] == e["mutant"] for f in entries) > 1})
        sys.exit(f"{EQUIVALENT}: judged more than once: {', '.join(twice)}")
    return judged


def read_run(out: pathlib.Path) -> dict[str, str]:
    """Mutant name -> summary for the run in `out`: its ledger of earlier runs (kept by
    `--iterate`), overlaid with its last run's outcomes."""
    rows = {}
    ledger = out / "ledger.json"
    if ledger.exists():
        rows.update(json.loads(ledger.read_text()))
    last = out / "mutants.out" / "outcomes.json"
    if last.exists():
        for outcome in json.loads(last.read_text())["outcomes"]:
            scenario = outcome["scenario"]
            if isinstance(scenario, dict) and "Mutant" in scenario:
                rows[scenario["Mutant"]["name"]] = outcome["summary"]
    return rows


def keep_ledger(out: pathlib.Path) -> None:
    """Before an `--iterate` run (which tests only the survivors not judged equivalent and keeps
    no outcome of the rest), folds every outcome so far into `ledger.json`."""
    rows = read_run(out)
    if rows:
        (out / "ledger.json").write_text(json.dumps(rows, indent=1, sort_keys=True))


def outcomes(directory: str) -> list[tuple[str, str]]:
    """(mutant name, summary) for each mutant of the directory's runs (all of it, or its
    shards), in name order."""
    found = (OUT / directory).rglob("*")
    runs = sorted(path for path in found if (path / "mutants.out").is_dir() or (path / "ledger.json").exists())
    rows = {}
    for out in runs:
        rows.update(read_run(out))
    if not rows:
        sys.exit(f"{OUT / directory}: no run yet; `tools/mutants/score.py run {directory}` makes one")
    return sorted(rows.items())


def show(directories: list[str]) -> int:
    """Prints the table and each unexplained survivor; 1 when a directory is under 90 % or has
    mutants no run has tested (the sources changed since)."""
    known = equivalent()
    print("| directory | mutants | caught | timed out | missed | equivalent | unviable | untested | score |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    survivors = []
    failing = False
    for directory in directories:
        # Outcomes of mutants that no longer exist (the code moved) are not counted.
        tested = dict(outcomes(directory))
        names = current(directory)
        count = {"CaughtMutant": 0, "Timeout": 0, "MissedMutant": 0, "Unviable": 0, None: 0}
        equivalents = 0
        for name in names:
            summary = tested.get(name)
            if summary == "MissedMutant" and name in known:
                equivalents += 1
                continue
            count[summary] = count.get(summary, 0) + 1
            if summary == "MissedMutant":
                survivors.append(name)
        killed = count["CaughtMutant"] + count["Timeout"]
        viable = killed + count["MissedMutant"]
        score = 100.0 * killed / viable if viable else 100.0
        failing |= score < 90.0 or count[None] > 0
        print(
            f"| `{directory}/` | {len(names)} | {count['CaughtMutant']} | {count['Timeout']} "
            f"| {count['MissedMutant']} | {equivalents} | {count['Unviable']} | {count[None]} "
            f"| {score:.1f} % |"
        )
    if survivors:
        print("\nMissed, not judged equivalent:")
        for name in survivors:
            print(f"- {name}")
    return 1 if failing else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=["run", "show"])
    parser.add_argument("directories", nargs="+", help="under crates/harness/src/")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per mutant's tests")
    parser.add_argument("--shard", help="k/n: run part k (0 to n-1) of n of each directory's mutants")
    parser.add_argument(
        "--iterate", action="store_true",
        help="test only the mutants the last run did not catch (after adding tests)",
    )
    parser.add_argument(
        "--untested", action="store_true",
        help="test only the mutants no run over the directory has an outcome for (the rest of "
        "an interrupted run), kept under <dir>/untested",
    )
    parser.add_argument(
        "--unit-only", action="store_true",
        help="run only the harness's unit tests (faster; can only lower the score)",
    )
    parser.add_argument(
        "--skip", action="append", default=[], metavar="TEST",
        help="leave out the tests whose names contain TEST (`tokens::bpe::` for the estimator's "
        "files, which the exact tokenizer's slow tests never reach); can only lower the score",
    )
    arguments = parser.parse_args()
    if arguments.action == "run":
        for directory in arguments.directories:
            run(
                directory, arguments.timeout, arguments.shard, arguments.iterate,
                arguments.unit_only, arguments.skip, arguments.untested,
            )
    return show(arguments.directories)


if __name__ == "__main__":
    sys.exit(main())
