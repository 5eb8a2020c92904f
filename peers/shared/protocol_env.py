"""The peer protocol's environment variables (docs/peer-protocol.md), shared by the Python
adapters: a `reset` line sets those it gives and unsets the others, so the next scenario sees the
environment a new process would. Also the file name an adapter gives a session it keeps under
CTXBED_STATE_DIR."""
import os

PROTOCOL_VARIABLES = (
    "CTXBED_API", "CTXBED_OPENAI_BASE_URL", "CTXBED_ANTHROPIC_BASE_URL", "CTXBED_MODEL", "CTXBED_API_KEY",
    "CTXBED_WINDOW", "CTXBED_MAX_OUTPUT_TOKENS", "CTXBED_THINKING_BUDGET", "CTXBED_STREAM", "CTXBED_STATE_DIR",
    "CTXBED_BIN", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "NO_PROXY", "no_proxy",
)


def apply_env(env):
    """The next scenario's environment, from a `reset` line's `env`."""
    for name in PROTOCOL_VARIABLES:
        os.environ.pop(name, None)
    os.environ.update(env)


def session_file_name(session):
    """A protocol `session` name (any string) as a safe file name, the same in every process: the
    hex of its UTF-8 bytes (`s1` -> `7331`), so no name can reach outside CTXBED_STATE_DIR and no
    two names share a file."""
    return session.encode("utf-8").hex()
