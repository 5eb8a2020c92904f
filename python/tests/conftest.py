"""The sample tests' own fixtures: ``pytester``, to run a test file of a user's in a pytest of
its own and read its outcome (for failures that the ctxbed plugin raises around a test)."""

pytest_plugins = ["pytester"]
