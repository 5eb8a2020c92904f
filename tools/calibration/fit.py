#!/usr/bin/env python3
"""Fits the approximate estimator's weights for one vocabulary on the calibration corpus.

    cargo test --test estimator calibration_features_table -- --ignored --nocapture > table.tsv
    python3 tools/calibration/fit.py table.tsv o200k
    python3 tools/calibration/fit.py table.tsv cl100k

The table has one line per chunk: its half (`fit`, `held-out`, or `hand-held-out` for the
hand-written corpus's `holdout/`), family, exact o200k and cl100k counts, and the estimator's
features. Only `fit` lines are fitted on. Both fits are weighted least squares on relative
error, once per family (its whole text) and, with less weight, per chunk, re-weighted round
after round towards the family with the largest error (so they approach the smallest worst
error), with the weights kept non-negative and the absorbing-piece order the estimator asserts.
Prices of features too rare in the corpus (`FIXED`) stay at approx-v1's. The best round's
integer weights are printed, then the error on every family of both halves.

Each vocabulary keeps the fit that produced its table (`SETTINGS`):

- o200k: `fit_first`, on the first twenty features only (the others are priced zero). Negative
  prices are clipped after each solve, and a chunk's error counts however small the chunk.
- cl100k: `fit_minimax`, on every feature. A negative price takes the feature out of the solve
  (it is priced zero) and prices out of order are tied into one, and the least squares are
  solved again under each constraint before a round is scored; only chunks of at least
  `CHUNK_TOKENS_MIN` exact tokens are scored (a family's last chunk can be a few lines, where
  one token is several per cent). With `fit_first` and the first twenty features, the cl100k
  families of Simplified and Traditional Chinese, Ukrainian, JavaScript, Rust and Markdown
  stayed 10-13 % off on the held-out half: the features `word_symbol`, `word_non_ascii`,
  `cyrillic_extended` and `han_rare` were added for them, and `fit_first`'s adjustments after
  the solve (raising word pieces to the price of punctuation pieces) do not fit them.

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
    "word_symbol": 0, "word_non_ascii": 0, "cyrillic_extended": 0, "han_rare": 0,
}
FIRST_FEATURES = list(V1)[:20]
# Pieces that absorb another must cost at least as much as the piece they absorb.
ORDER = [("word_piece", "punctuation_piece"), ("punctuation_piece", "space_piece"),
         ("newline_piece", "space_piece")]
RIDGE, FIXED_RIDGE, CHUNK_SHARE = 1e-4, 100.0, 0.3

SETTINGS = {
    "o200k": {
        "fit": "first", "features": FIRST_FEATURES,
        "fixed": {"symbol", "greek", "other_two_byte"},
    },
    # Latin letters (332 in the fit half) and other three-byte characters (908, nearly all of
    # them the emoji variation selector) are too few to price scripts by.
    "cl100k": {
        "fit": "minimax", "features": list(V1),
        "fixed": {"symbol", "greek", "other_two_byte", "latin", "other_three_byte"},
    },
}

# fit_first: rounds, re-weighting step, weight of the worst chunk's error against the family's.
FIRST_ROUNDS, FIRST_STEP, FIRST_CHUNK_FACTOR = 80, 3.0, 0.6
# fit_minimax: the same, and the smallest chunk whose error is scored.
MINIMAX_ROUNDS, MINIMAX_STEP, MINIMAX_CHUNK_FACTOR, CHUNK_TOKENS_MIN = 60, 1.0, 0.5, 1000


def load(path, vocabulary):
    """The feature names the vocabulary's fit uses, and one row per chunk."""
    lines = [line.rstrip("\n").split("\t") for line in open(path, encoding="utf-8")]
    lines = [line for line in lines if len(line) > 6]
    header, rows = lines[0], lines[1:]
    columns = {name: index for index, name in enumerate(header[6:])}
    names = SETTINGS[vocabulary]["features"]
    missing = [name for name in names if name not in columns]
    if missing:
        sys.exit(f"the table has no column {missing}")
    data = []
    for row in rows:
        family = row[1]
        if family.startswith("hand-"):
            continue  # the hand-written corpus is measured by the test, not fitted here
        counts = [int(x) for x in row[6:]]
        data.append({
            "split": row[0], "family": family, "chunk": int(row[2]),
            "o200k": int(row[4]), "cl100k": int(row[5]),
            "f": [counts[columns[name]] for name in names],
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


def errors(names, data, vocabulary, weights, split, chunk_tokens_min=0):
    """Per family: (whole-text error, worst chunk index, worst chunk error, exact tokens, worst
    error of a chunk of at least `chunk_tokens_min` exact tokens)."""
    out = {}
    for family in sorted({row["family"] for row in data if row["split"] == split}):
        rows = [row for row in data if row["split"] == split and row["family"] == family]
        exact = sum(row[vocabulary] for row in rows)
        total = sum(estimate(row, names, weights) for row in rows) / exact - 1
        chunk_error = lambda row: estimate(row, names, weights) / row[vocabulary] - 1
        worst = max(rows, key=lambda row: abs(chunk_error(row)))
        scored = [row for row in rows if row[vocabulary] >= chunk_tokens_min] or rows
        worst_scored = max(scored, key=lambda row: abs(chunk_error(row)))
        out[family] = (total, worst["chunk"], chunk_error(worst), exact, chunk_error(worst_scored))
    return out


def fit_rows(names, data, vocabulary, chunk_tokens_min):
    """The rows both fits solve on: each family's whole text, then its chunks."""
    fitted = [row for row in data if row["split"] == "fit"]
    families = sorted({row["family"] for row in fitted})
    rows = []
    for family in families:
        chunks = [row for row in fitted if row["family"] == family]
        whole = [sum(row["f"][i] for row in chunks) for i in range(len(names))]
        rows.append((family, whole, sum(row[vocabulary] for row in chunks), 1.0))
        scored = [row for row in chunks if row[vocabulary] >= chunk_tokens_min]
        rows.extend((family, row["f"], row[vocabulary], CHUNK_SHARE / len(scored)) for row in scored)
    return families, rows


def fit_first(names, data, vocabulary, fixed):
    """The fit approx-v2-o200k's weights come from."""
    families, rows = fit_rows(names, data, vocabulary, 0)
    family_weight = {family: 1.0 for family in families}
    n, best = len(names), None
    for _ in range(FIRST_ROUNDS):
        matrix, vector = normal_equations(
            rows, family_weight, n, lambda features, exact: [v / exact for v in features]
        )
        for i, name in enumerate(names):
            ridge = FIXED_RIDGE if name in fixed else RIDGE
            matrix[i][i] += ridge
            vector[i] += ridge * V1[name] / 1000
        solution = solve(matrix, vector)
        weights = {name: max(0, round(value * 1000)) for name, value in zip(names, solution)}
        weights["punctuation_piece"] = max(weights["punctuation_piece"], weights["space_piece"])
        weights["word_piece"] = max(weights["word_piece"], weights["punctuation_piece"])
        weights["newline_piece"] = max(weights["newline_piece"], weights["space_piece"])
        measured = errors(names, data, vocabulary, weights, "fit")
        score = {f: max(abs(e[0]), abs(e[2]) * FIRST_CHUNK_FACTOR) for f, e in measured.items()}
        worst = max(score.values())
        if best is None or worst < best[0]:
            best = (worst, weights)
        for family in families:
            family_weight[family] *= 1 + FIRST_STEP * score[family] / worst * score[family]
        total = sum(family_weight.values())
        family_weight = {f: w * len(families) / total for f, w in family_weight.items()}
    return best[1]


def normal_equations(rows, family_weight, n, project):
    """The weighted least-squares normal equations (matrix, vector) over `n` unknowns, each
    row's relative features given by `project(features, exact)`."""
    matrix, vector = [[0.0] * n for _ in range(n)], [0.0] * n
    for family, features, exact, share in rows:
        x = project(features, exact)
        weight = share * family_weight[family]
        for i in range(n):
            if x[i]:
                vector[i] += weight * x[i]
                for j in range(n):
                    matrix[i][j] += weight * x[i] * x[j]
    return matrix, vector


def least_squares(names, rows, family_weight, fixed, groups):
    """Prices (in tokens) solving the weighted least squares with each group of features
    sharing one price; features of no group are priced zero."""
    n = len(groups)
    matrix, vector = normal_equations(
        rows,
        family_weight,
        n,
        lambda features, exact: [sum(features[i] for i in group) / exact for group in groups],
    )
    for k, group in enumerate(groups):
        ridge = FIXED_RIDGE if any(names[i] in fixed for i in group) else RIDGE
        matrix[k][k] += ridge
        vector[k] += ridge * V1[names[group[0]]] / 1000
    prices = [0.0] * len(names)
    for group, price in zip(groups, solve(matrix, vector)):
        for i in group:
            prices[i] = price
    return prices


def constrained(names, rows, family_weight, fixed):
    """Integer milli-token weights: least squares with the most negative price taken out until
    none is left, and prices that break `ORDER` tied (which starts the removals over)."""
    tied = [[i] for i in range(len(names))]
    removed = set()
    while True:
        groups = [group for k, group in enumerate(tied) if k not in removed]
        prices = least_squares(names, rows, family_weight, fixed, groups)
        negative = [(prices[tied[k][0]], k) for k in range(len(tied))
                    if k not in removed and prices[tied[k][0]] < 0]
        if negative:
            removed.add(min(negative)[1])
            continue
        out_of_order = [(names.index(high), names.index(low)) for high, low in ORDER
                        if prices[names.index(high)] < prices[names.index(low)]]
        if not out_of_order:
            return {name: round(price * 1000) for name, price in zip(names, prices)}
        high, low = out_of_order[0]
        k_high = next(k for k, group in enumerate(tied) if high in group)
        k_low = next(k for k, group in enumerate(tied) if low in group)
        tied[k_high] = tied[k_high] + tied[k_low]
        tied = [group for k, group in enumerate(tied) if k != k_low]
        removed = set()


def fit_minimax(names, data, vocabulary, fixed):
    """The fit approx-v2-cl100k's weights come from."""
    families, rows = fit_rows(names, data, vocabulary, CHUNK_TOKENS_MIN)
    family_weight = {family: 1.0 for family in families}
    best = None
    for _ in range(MINIMAX_ROUNDS):
        weights = constrained(names, rows, family_weight, fixed)
        measured = errors(names, data, vocabulary, weights, "fit", CHUNK_TOKENS_MIN)
        score = {f: max(abs(e[0]), abs(e[4]) * MINIMAX_CHUNK_FACTOR) for f, e in measured.items()}
        worst = max(score.values())
        if best is None or worst < best[0]:
            best = (worst, weights)
        for family in families:
            family_weight[family] *= 1 + MINIMAX_STEP * (score[family] / worst) ** 2
        total = sum(family_weight.values())
        family_weight = {f: w * len(families) / total for f, w in family_weight.items()}
    return best[1]


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in SETTINGS:
        sys.exit("usage: fit.py TABLE.tsv o200k|cl100k")
    vocabulary = sys.argv[2]
    settings = SETTINGS[vocabulary]
    names, data = load(sys.argv[1], vocabulary)
    fit = fit_first if settings["fit"] == "first" else fit_minimax
    weights = fit(names, data, vocabulary, settings["fixed"])
    for name in V1:
        print(f"    {name}: {weights.get(name, 0):_},")
    for split in ("fit", "held-out"):
        print(f"\n{split} error against exact {vocabulary}:")
        for family, (total, chunk, worst, exact, _) in errors(names, data, vocabulary, weights, split).items():
            print(f"{family:<16} {exact:>7} {total * 100:+6.1f} %  worst chunk #{chunk} {worst * 100:+6.1f} %")


if __name__ == "__main__":
    main()
