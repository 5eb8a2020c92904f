#!/usr/bin/env python3
"""Fits the approximate estimator's weights for one vocabulary on the calibration corpus.

    cargo test --test estimator calibration_features_table -- --ignored --nocapture > table.tsv
    python3 tools/calibration/fit.py table.tsv o200k

The table has one line per chunk: its half (`fit`, `held-out`, or `hand-held-out` for the
hand-written corpus's `holdout/`), family, exact o200k and cl100k counts, and the estimator's
features. Only `fit` lines are fitted on. The fit is a weighted least-squares on relative
error, once per family (its whole text) and, with less weight, per chunk, re-weighted round
after round towards the family with the largest error (so it approaches the smallest worst
error), with the weights kept non-negative and the absorbing-piece order the estimator asserts.
Prices of features too rare in the corpus (`FIXED`) stay at approx-v1's. The best round's
integer weights are printed, then the error on every family of the held-out half.

Standard library only.
"""

import sys

# approx-v1's prices: the starting point, and the price of features held fixed.
V1 = {
    "word_piece": 1000, "word_long_letter": 150, "digit_piece": 1000,
    "punctuation_piece": 1000, "punctuation_long": 1150, "space_piece": 1000,
    "newline_piece": 1000, "han": 665, "kana": 700, "hangul": 300, "cjk_punctuation": 1000,
    "latin": 350, "greek": 200, "cyrillic": 100, "hebrew_arabic": 100, "other_two_byte": 300,
    "indic": 120, "symbol": 900, "other_three_byte": 500, "four_byte": 1000,
}
FIXED = {"symbol", "greek", "other_two_byte"}
RIDGE, FIXED_RIDGE, ROUNDS, STEP, CHUNK_SHARE, CHUNK_FACTOR = 1e-4, 100.0, 80, 3.0, 0.3, 0.6


def load(path):
    lines = [line.rstrip("\n").split("\t") for line in open(path, encoding="utf-8")]
    lines = [line for line in lines if len(line) > 6]
    header, rows = lines[0], lines[1:]
    names = header[6:]
    data = []
    for row in rows:
        family = row[1]
        if family.startswith("hand-"):
            continue  # the hand-written corpus is measured by the test, not fitted here
        data.append({
            "split": row[0], "family": family, "chunk": int(row[2]),
            "o200k": int(row[4]), "cl100k": int(row[5]), "f": [int(x) for x in row[6:]],
        })
    return names, data


def estimate(row, names, weights):
    return -(-sum(count * weights[name] for count, name in zip(row["f"], names)) // 1000)


def solve(matrix, vector):
    """Gaussian elimination with partial pivoting."""
    n = len(matrix)
    m = [row[:] + [value] for row, value in zip(matrix, vector)]
    for i in range(n):
        pivot = max(range(i, n), key=lambda r: abs(m[r][i]))
        m[i], m[pivot] = m[pivot], m[i]
        if abs(m[i][i]) < 1e-12:
            continue
        for r in range(n):
            if r != i and m[r][i] != 0:
                k = m[r][i] / m[i][i]
                for c in range(i, n + 1):
                    m[r][c] -= k * m[i][c]
    return [m[i][n] / m[i][i] if abs(m[i][i]) > 1e-12 else 0.0 for i in range(n)]


def errors(names, data, vocabulary, weights, split):
    """Per family: (whole-text error, worst chunk index, worst chunk error, exact tokens)."""
    out = {}
    for family in sorted({row["family"] for row in data if row["split"] == split}):
        rows = [row for row in data if row["split"] == split and row["family"] == family]
        exact = sum(row[vocabulary] for row in rows)
        total = sum(estimate(row, names, weights) for row in rows) / exact - 1
        worst = max(rows, key=lambda row: abs(estimate(row, names, weights) / row[vocabulary] - 1))
        out[family] = (total, worst["chunk"], estimate(worst, names, weights) / worst[vocabulary] - 1, exact)
    return out


def fit(names, data, vocabulary):
    fitted = [row for row in data if row["split"] == "fit"]
    families = sorted({row["family"] for row in fitted})
    rows = []
    for family in families:
        chunks = [row for row in fitted if row["family"] == family]
        whole = [sum(row["f"][i] for row in chunks) for i in range(len(names))]
        rows.append((family, whole, sum(row[vocabulary] for row in chunks), 1.0))
        rows.extend((family, row["f"], row[vocabulary], CHUNK_SHARE / len(chunks)) for row in chunks)
    family_weight = {family: 1.0 for family in families}
    n, best = len(names), None
    for _ in range(ROUNDS):
        matrix, vector = [[0.0] * n for _ in range(n)], [0.0] * n
        for family, features, exact, share in rows:
            x = [value / exact for value in features]
            weight = share * family_weight[family]
            for i in range(n):
                if x[i]:
                    vector[i] += weight * x[i]
                    for j in range(n):
                        matrix[i][j] += weight * x[i] * x[j]
        for i, name in enumerate(names):
            ridge = FIXED_RIDGE if name in FIXED else RIDGE
            matrix[i][i] += ridge
            vector[i] += ridge * V1[name] / 1000
        solution = solve(matrix, vector)
        weights = {name: max(0, round(value * 1000)) for name, value in zip(names, solution)}
        weights["punctuation_piece"] = max(weights["punctuation_piece"], weights["space_piece"])
        weights["word_piece"] = max(weights["word_piece"], weights["punctuation_piece"])
        weights["newline_piece"] = max(weights["newline_piece"], weights["space_piece"])
        measured = errors(names, data, vocabulary, weights, "fit")
        score = {f: max(abs(e[0]), abs(e[2]) * CHUNK_FACTOR) for f, e in measured.items()}
        worst = max(score.values())
        if best is None or worst < best[0]:
            best = (worst, weights)
        for family in families:
            family_weight[family] *= 1 + STEP * score[family] / worst * score[family]
        total = sum(family_weight.values())
        family_weight = {f: w * len(families) / total for f, w in family_weight.items()}
    return best[1]


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("o200k", "cl100k"):
        sys.exit("usage: fit.py TABLE.tsv o200k|cl100k")
    names, data = load(sys.argv[1])
    vocabulary = sys.argv[2]
    weights = fit(names, data, vocabulary)
    for name in names:
        print(f"    {name}: {weights[name]:_},")
    print(f"\nheld-out error against exact {vocabulary}:")
    for family, (total, chunk, worst, exact) in errors(names, data, vocabulary, weights, "held-out").items():
        print(f"{family:<16} {exact:>7} {total * 100:+6.1f} %  worst chunk #{chunk} {worst * 100:+6.1f} %")


if __name__ == "__main__":
    main()
