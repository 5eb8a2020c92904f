#!/usr/bin/env python3
"""Gathers the estimator's calibration corpus from a Debian machine with a Rust toolchain.

    python3 tools/calibration/gather.py tests/data/estimator/calibration

Every family of text (a kind of log, a language, a kind of code) is read from real files on
the machine, from two Debian packages fetched with `apt-get download` (fail2ban's test logs;
unicode-data's emoji list), or from the output of real programs run here (`ls -lR`, `cargo
build -v`, `cargo test`, Python tracebacks). Each source is capped, cut into chunks of at most
20 KB at line ends, and its chunks alternate between `fit/` and `held-out/` (a source's first
chunk goes to `fit/` for even-numbered sources and to `held-out/` for odd ones), so the split
is fixed before any fitting. The estimator's weights are fitted on `fit/` only; the test and
the benchmark report `held-out/`.

Machine-specific strings (the home directory, temporary directories, the host name) are
replaced with neutral ones, so a rerun on another machine differs only in what that machine
has installed. Standard library only; needs `apt-get`, `dpkg-deb`, `cargo`, `man`, `ls`.
"""

import gzip
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

CHUNK_BYTES = 20 * 1024
HOME = os.path.expanduser("~")
NEUTRAL_HOME = "/home/user"
NEUTRAL_PROJECT = "/src/demo"
PACKAGES = ["fail2ban", "unicode-data"]


def neutral(text, extra=()):
    """Replaces this machine's own paths and names with neutral ones."""
    for path, replacement in extra:
        text = text.replace(path, replacement)
    text = text.replace(HOME, NEUTRAL_HOME)
    text = re.sub(r"/tmp/[A-Za-z0-9_.-]+", "/tmp/build", text)
    host = socket.gethostname()
    if len(host) >= 4:
        text = text.replace(host, "host")
    return text


def read(path):
    data = Path(path).read_bytes()
    if str(path).endswith(".gz"):
        data = gzip.decompress(data)
    return data.decode("utf-8", errors="replace")


def capped(text, limit):
    """The first `limit` bytes of `text`, cut at a line end."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    cut = data[:limit].rfind(b"\n")
    return data[: cut + 1 if cut > 0 else limit].decode("utf-8", errors="ignore")


def chunks(text):
    """Chunks of at most CHUNK_BYTES, cut at line ends (a longer line is a chunk alone)."""
    out, current, size = [], [], 0
    for line in re.findall(r"[^\n]*\n|[^\n]+$", text):
        length = len(line.encode("utf-8"))
        if current and size + length > CHUNK_BYTES:
            out.append("".join(current))
            current, size = [], 0
        current.append(line)
        size += length
    if current:
        out.append("".join(current))
    return out


def run(command, cwd=None, env=None, check=False):
    result = subprocess.run(
        command,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
    )
    if check and result.returncode != 0:
        sys.exit(f"{command} failed:\n{result.stdout[-2000:]}")
    return result.stdout


# --- .mo catalogs -----------------------------------------------------------------------


def mo_messages(path):
    """The translated strings of a GNU gettext .mo file (plural forms one per line)."""
    data = Path(path).read_bytes()
    magic = struct.unpack("<I", data[:4])[0]
    order = "<" if magic == 0x950412DE else ">"
    _, count, _, translations = struct.unpack(order + "4I", data[4:20])
    messages = []
    for index in range(count):
        length, offset = struct.unpack(order + "2I", data[translations + 8 * index :][:8])
        text = data[offset : offset + length].decode("utf-8", errors="replace")
        if index == 0 and text.startswith("Project-Id-Version"):
            continue  # the catalog's header
        if text.strip():
            messages.append(text.replace("\0", "\n"))
    return messages


def catalog_text(language, limit):
    """Messages of every catalog of one language, a share of each so that many domains count."""
    directory = Path("/usr/share/locale") / language / "LC_MESSAGES"
    files = sorted(directory.glob("*.mo")) if directory.is_dir() else []
    # ISO code lists are names of countries and languages, not sentences: left out.
    files = [f for f in files if not f.name.startswith("iso_")]
    if not files:
        return "", []
    share = max(2048, limit // len(files))
    parts = []
    for path in files:
        parts.append(capped("\n".join(mo_messages(path)) + "\n", share))
    return capped("".join(parts), limit), [f"{path.stem}" for path in files]


def man_text(language, limit):
    """Rendered manual pages of one language (`man -l`), plain text."""
    directory = Path("/usr/share/man") / language / "man1" if language else Path(
        "/usr/share/man/man1"
    )
    if not directory.is_dir():
        return "", []
    env = dict(os.environ, MANWIDTH="80", LANG="C.UTF-8", MAN_KEEP_FORMATTING="")
    parts, names, size = [], [], 0
    for path in sorted(directory.glob("*.gz")):
        if size >= limit:
            break
        page = run(["man", "-E", "UTF-8", "-l", str(path)], env=env)
        page = re.sub(r".\x08", "", page)
        if len(page) < 500:
            continue
        parts.append(page)
        names.append(path.name.split(".")[0])
        size += len(page.encode("utf-8"))
    return capped("".join(parts), limit), names


# --- programs run here ------------------------------------------------------------------

DEMO_LIB = r'''
//! A small library whose build warns and whose tests partly fail, for captured output.
use std::collections::HashMap;

pub fn parse_pairs(input: &str) -> HashMap<String, i64> {
    let mut map = HashMap::new();
    for line in input.lines() {
        let unused_width = line.len();
        let mut parts = line.splitn(2, '=');
        let key = parts.next().unwrap().trim().to_string();
        let value: i64 = parts.next().unwrap().trim().parse().unwrap();
        map.insert(key, value);
    }
    map
}

pub fn mean(values: &[f64]) -> f64 {
    let total: f64 = values.iter().sum();
    total / values.len() as f64
}

fn never_called(x: u32) -> u32 { x * 2 }

#[allow(dead_code)]
struct Config { retries: u32, name: String }

#[cfg(test)]
mod tests {
    use super::*;
'''


def demo_tests():
    lines = []
    for index in range(240):
        if index % 29 == 7:
            lines.append(
                f"    #[test] fn parses_case_{index:03}() {{ let m = parse_pairs(\"a = {index}\\nb\"); assert_eq!(m.len(), 2); }}"
            )
        elif index % 29 == 13:
            lines.append(
                f"    #[test] fn mean_case_{index:03}() {{ assert_eq!(mean(&[{index}.0, 2.5]), {index}.0, \"mean of case {index}\"); }}"
            )
        elif index % 29 == 21:
            lines.append(
                f"    #[test] fn index_case_{index:03}() {{ let v = vec![1, 2, 3]; let i = {index}; assert!(v[i] > 0); }}"
            )
        else:
            lines.append(
                f"    #[test] fn passes_case_{index:03}() {{ let m = parse_pairs(\"k{index} = {index}\"); assert_eq!(m[\"k{index}\"], {index}); }}"
            )
    return "\n".join(lines) + "\n}\n"


def cargo_outputs(work):
    """`cargo build -v` of a project with a few registry dependencies, then its `cargo test`."""
    project = Path(work) / "demo"
    (project / "src").mkdir(parents=True)
    (project / "Cargo.toml").write_text(
        '[package]\nname = "demo"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n'
        'serde = { version = "1", features = ["derive"] }\nserde_json = "1"\nregex = "1"\n'
        'clap = { version = "4", features = ["derive"] }\ntoml = "1"\n'
    )
    (project / "src" / "lib.rs").write_text(DEMO_LIB + demo_tests())
    env = dict(os.environ, CARGO_TARGET_DIR=str(Path(work) / "target"), CARGO_TERM_COLOR="never")
    env.pop("RUSTFLAGS", None)
    build = run(["cargo", "build", "-v", "--offline"], cwd=project, env=env)
    test = run(["cargo", "test", "--offline", "--", "--test-threads=1"], cwd=project, env=env)
    env_full = dict(env, RUST_BACKTRACE="full")
    traces = run(["cargo", "test", "--offline", "--", "--test-threads=1"], cwd=project, env=env_full)
    # Keep the failing tests' sections (panics and their backtraces).
    traces = "".join(re.findall(r"---- .*?(?=\n---- |\nfailures:\n)", traces, re.S))
    extra = [(str(project), NEUTRAL_PROJECT), (str(Path(work) / "target"), NEUTRAL_PROJECT + "/target")]
    return neutral(build, extra), neutral(test, extra), neutral(traces, extra)


PYTHON_SNIPPETS = [
    "import json; json.loads({arg!r})",
    "import datetime; datetime.datetime.strptime({arg!r}, '%Y-%m-%d %H:%M')",
    "import re; re.compile({arg!r})",
    "import tomllib; tomllib.loads({arg!r})",
    "import xml.etree.ElementTree as E; E.fromstring({arg!r})",
    "import ipaddress; ipaddress.ip_network({arg!r})",
    "import decimal; decimal.Context(traps=[decimal.InvalidOperation]).create_decimal({arg!r})",
    "import base64; base64.b64decode({arg!r}, validate=True)",
    "import urllib.request; urllib.request.urlopen({arg!r})",
    "import shlex; shlex.split({arg!r})",
    "import configparser; c = configparser.ConfigParser(); c.read_string({arg!r})",
    "import fractions; fractions.Fraction({arg!r})",
    "import uuid; uuid.UUID({arg!r})",
    "import zipfile, io; zipfile.ZipFile(io.BytesIO({arg!r}.encode()))",
    "import subprocess; subprocess.run(['false', {arg!r}], check=True)",
    "import csv, io; list(csv.reader(io.StringIO({arg!r}), strict=True))",
    "import email.headerregistry as h; h.Address(addr_spec={arg!r})",
    "import struct; struct.unpack('>IH', {arg!r}.encode())",
    "import pathlib; pathlib.Path('/nonexistent/' + {arg!r}).read_text()",
    "import statistics; statistics.mean([float(x) for x in {arg!r}.split(',')])",
    "\ndef load(s):\n    try:\n        return int(s)\n    except ValueError as e:\n        raise RuntimeError('bad setting ' + s) from e\n\ndef main():\n    return [load(x) for x in {arg!r}.split()]\n\nmain()",
    "\nimport functools\n@functools.lru_cache\ndef depth(n):\n    return 1 + depth(n - 1) if n else {arg!r}[99]\n\ndepth(6)",
]
PYTHON_ARGUMENTS = [
    '{"name": "demo", "items": [1, 2,, 3]}',
    "2024-13-45 25:61",
    "(unclosed[group",
    'key = "value\nother = [1, 2',
    "<config><item>1</config>",
    "10.0.0.300/33",
    "1.2.3.4.5e",
    "not base64!!",
    "htp:/example.invalid/path",
    'echo "unterminated',
    "[section\nkey = value",
    "3/0",
    "1234-5678",
    "PK\x03\x04garbage",
    "--verbose",
    'a,"b\nc',
    "user@@example.com",
    "ab",
    "config.yaml",
    "1,2,x,4",
    "12 x7 30",
    "short",
]


def python_tracebacks():
    parts = []
    for snippet in PYTHON_SNIPPETS:
        for argument in PYTHON_ARGUMENTS[:12]:
            code = snippet.replace("{arg!r}", repr(argument))
            output = run(["/usr/bin/python3", "-c", code], env=dict(os.environ, LANG="C.UTF-8"))
            if "Traceback" in output:
                parts.append(output)
    return neutral("".join(parts))


# --- sources ----------------------------------------------------------------------------


def packages(work):
    """fail2ban and unicode-data, fetched and unpacked into `work` (nothing is installed)."""
    roots = {}
    for package in PACKAGES:
        target = Path(work) / package
        target.mkdir()
        run(["apt-get", "download", package], cwd=work, check=True)
        deb = next(Path(work).glob(f"{package}_*.deb"))
        run(["dpkg-deb", "-x", str(deb), str(target)], check=True)
        roots[package] = (target, deb.name.split("_")[1])
    return roots


def files_text(paths, limit, per_file=None):
    parts, size = [], 0
    for path in paths:
        if size >= limit:
            break
        try:
            text = read(path)
        except (OSError, ValueError):
            continue
        if per_file:
            text = capped(text, per_file)
        # fail2ban's test logs annotate lines with `# failJSON: ...`: not log text.
        text = "".join(l for l in text.splitlines(keepends=True) if not l.startswith("# failJSON"))
        parts.append(text if text.endswith("\n") else text + "\n")
        size += len(parts[-1].encode("utf-8"))
    return neutral(capped("".join(parts), limit))


def emoji_text(root):
    """Two readings of emoji-test.txt: one line of emoji per subgroup, then emoji with names."""
    bare, named, subgroup = [], [], None
    for line in read(root / "usr/share/unicode/emoji/emoji-test.txt").splitlines():
        if line.startswith("# subgroup:"):
            subgroup = line.split(":", 1)[1].strip()
            bare.append(f"\n{subgroup}: ")
            named.append(f"\n## {subgroup}\n")
        match = re.match(r"^[0-9A-F ]+;\s*fully-qualified\s*#\s*(\S+)\s+E[0-9.]+\s+(.*)$", line)
        if match:
            emoji, name = match.groups()
            bare.append(emoji)
            named.append(f"{emoji} {name}\n")
    return "".join(bare).strip() + "\n", "".join(named).strip() + "\n"


def csv_text():
    parts = [read("/usr/share/distro-info/debian.csv"), read("/usr/share/distro-info/ubuntu.csv")]
    for tab in ["zone1970.tab", "zone.tab", "iso3166.tab"]:
        parts.append(read(Path("/usr/share/zoneinfo") / tab))
    rows = run(
        ["dpkg-query", "-W", "-f", "${Package},${Version},${Architecture},${Installed-Size},${Priority},${Section}\n"]
    )
    tsv = run(["dpkg-query", "-W", "-f", "${Package}\t${Source}\t${Version}\t${Status}\n"])
    parts.append("package,version,architecture,installed_size,priority,section\n" + rows)
    parts.append("package\tsource\tversion\tstatus\n" + tsv)
    return "".join(p if p.endswith("\n") else p + "\n" for p in parts)


def json_texts():
    root = Path("/usr/share/iso-codes/json")
    pretty, compact = [], []
    for path in sorted(root.glob("*.json")):
        text = read(path)
        pretty.append(capped(text, 40 * 1024))
        # Compact documents of at most 16 KB each, one a line: the entries of the file's list,
        # a run at a time.
        lines = []
        for key, entries in json.loads(text).items():
            if isinstance(entries, list):
                lines.extend(compact_lines(key, entries))
        compact.append(capped("\n".join(lines) + "\n", 40 * 1024))
    return "\n".join(pretty), "".join(compact)


def compact_lines(key, entries):
    """`{key: [...]}` documents of at most 16 KB, compact, over consecutive runs of entries."""
    lines, run_of = [], []
    for entry in entries:
        run_of.append(entry)
        line = json.dumps({key: run_of}, ensure_ascii=False, separators=(",", ":"))
        if len(line.encode("utf-8")) > 16 * 1024:
            lines.append(json.dumps({key: run_of[:-1]}, ensure_ascii=False, separators=(",", ":")))
            run_of = [entry]
    lines.append(json.dumps({key: run_of}, ensure_ascii=False, separators=(",", ":")))
    return lines


def registry_files(pattern, limit, per_file):
    roots = sorted(Path(HOME, ".cargo/registry/src").glob("*/*"))
    paths = []
    for root in roots:
        paths.extend(sorted(root.glob(pattern))[:3])
    return files_text(paths, limit, per_file)


def families(work):
    """Each family: (name, [(source text, origin, license note)])."""
    roots = packages(work)
    fail2ban, fail2ban_version = roots["fail2ban"]
    unicode, unicode_version = roots["unicode-data"]
    build, test, rust_traces = cargo_outputs(work)
    emoji_bare, emoji_named = emoji_text(unicode)
    json_pretty, json_compact = json_texts()
    logs = sorted((fail2ban / "usr/lib/python3/dist-packages/fail2ban/tests/files/logs").glob("*"))
    ls = run(["ls", "-lR", "/usr/share/doc", "/usr/share/zoneinfo"], env=dict(os.environ, LANG="C", TZ="UTC"))
    python = sorted(Path("/usr/lib/python3.11").glob("*.py")) + sorted(
        Path("/usr/lib/python3.11").glob("*/*.py")
    )
    headers = sorted(Path("/usr/include").glob("*.h"))
    js = sorted(Path("/usr/share/javascript").glob("*/*.js"))
    js = [p for p in js if ".min." not in p.name]
    family_list = [
        ("log-dpkg", [(read("/var/log/dpkg.log"), "/var/log/dpkg.log (dpkg)", "machine log")]),
        (
            "log-apt",
            [
                (read("/var/log/apt/term.log"), "/var/log/apt/term.log (apt)", "machine log"),
                (read("/var/log/apt/history.log"), "/var/log/apt/history.log (apt)", "machine log"),
            ],
        ),
        ("log-syslog", [(files_text(logs, 400 * 1024, 24 * 1024), f"fail2ban {fail2ban_version}: tests/files/logs/*", "GPL-2+")]),
        ("log-ls-lR", [(ls, "`ls -lR /usr/share/doc /usr/share/zoneinfo`", "generated listing")]),
        ("log-cargo-build", [(build, "`cargo build -v` of a demo crate using serde, serde_json, regex, clap, toml", "compiler output")]),
        ("log-cargo-test", [(test, "`cargo test` of the same demo crate (some tests fail)", "test-runner output")]),
        ("trace-rust", [(rust_traces, "panics of the demo crate's failing tests, RUST_BACKTRACE=full", "runtime output")]),
        ("trace-python", [(python_tracebacks(), "Python 3.11 tracebacks of standard-library calls given bad input", "runtime output")]),
        ("data-csv", [(csv_text(), "distro-info CSV, tzdata .tab files, dpkg-query CSV/TSV", "public domain / machine data")]),
        ("json-pretty", [(json_pretty, "iso-codes JSON (as shipped)", "LGPL-2.1+")]),
        ("json-compact", [(json_compact, "iso-codes JSON (re-serialised compactly)", "LGPL-2.1+")]),
        ("code-rust", [(registry_files("src/**/*.rs", 400 * 1024, 12 * 1024), "crate sources (the workspace's dependencies)", "MIT / Apache-2.0")]),
        ("code-python", [(files_text(python, 400 * 1024, 12 * 1024), "Python 3.11 standard library", "PSF-2.0")]),
        ("code-js", [(files_text(js, 400 * 1024, 40 * 1024), "libjs-jquery, libjs-underscore, sphinx JavaScript", "MIT / BSD-2-Clause")]),
        ("code-c", [(files_text(headers, 400 * 1024, 12 * 1024), "/usr/include headers (libc6-dev and others)", "LGPL-2.1+ / various")]),
        ("prose-man", [(man_text("", 400 * 1024)[0], "English manual pages, rendered by man", "various free licenses")]),
        ("prose-markdown", [(registry_files("*.md", 400 * 1024, 16 * 1024), "README and CHANGELOG files of crates", "MIT / Apache-2.0")]),
    ]
    languages = [
        ("cjk-ja", "ja"),
        ("cjk-zh-hans", "zh_CN"),
        ("cjk-zh-hant", "zh_TW"),
        ("cjk-ko", "ko"),
        ("cyrillic-ru", "ru"),
        ("cyrillic-uk", "uk"),
        ("arabic", "ar"),
        ("devanagari", "hi"),
    ]
    for family, language in languages:
        messages, domains = catalog_text(language, 240 * 1024)
        sources = [(messages, f"gettext catalogs in /usr/share/locale/{language} ({len(domains)} domains)", "each package's license")]
        manual, pages = man_text(language, 120 * 1024)
        if manual:
            sources.append((manual, f"manual pages in /usr/share/man/{language} ({len(pages)} pages)", "each package's license"))
        family_list.append((family, sources))
    family_list.append(
        (
            "emoji",
            [
                (emoji_bare, f"unicode-data {unicode_version}: emoji-test.txt, emoji by subgroup", "Unicode License"),
                (emoji_named, f"unicode-data {unicode_version}: emoji-test.txt, emoji with names", "Unicode License"),
            ],
        )
    )
    return family_list


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gather.py OUTPUT_DIRECTORY")
    out = Path(sys.argv[1])
    per_family = 160 * 1024
    with tempfile.TemporaryDirectory() as work:
        family_list = families(work)
    for split in ["fit", "held-out"]:
        shutil.rmtree(out / split, ignore_errors=True)
        (out / split).mkdir(parents=True)
    manifest = [
        "# Calibration corpus",
        "",
        "Gathered by `tools/calibration/gather.py` (see its header). Each family's sources are cut",
        "into chunks of at most 20 KB at line ends; chunks alternate between `fit/` (weights are",
        "fitted on these) and `held-out/` (only measured). Files are UTF-8; machine-specific paths",
        "are replaced with neutral ones.",
        "",
        "| family | source | license | fit bytes | held-out bytes |",
        "| --- | --- | --- | ---: | ---: |",
    ]
    for family, sources in family_list:
        split_parts = {"fit": [], "held-out": []}
        share = per_family // len(sources)
        for number, (text, origin, license_note) in enumerate(sources):
            text = neutral(text)
            pieces = chunks(capped(text, share))
            sizes = {"fit": 0, "held-out": 0}
            for index, piece in enumerate(pieces):
                split = "fit" if (index + number) % 2 == 0 else "held-out"
                split_parts[split].append(piece)
                sizes[split] += len(piece.encode("utf-8"))
            manifest.append(f"| {family} | {origin} | {license_note} | {sizes['fit']} | {sizes['held-out']} |")
        for split, parts in split_parts.items():
            (out / split / f"{family}.txt").write_text("".join(parts), encoding="utf-8")
    (out / "MANIFEST.md").write_text("\n".join(manifest) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
