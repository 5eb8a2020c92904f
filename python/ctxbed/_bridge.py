"""The adapter ``ctxbed conform`` runs for a Python test: it relays the peer protocol between
conform (its standard input and output) and the test's process (a Unix socket), so the test
body itself answers each step. Its first line to the test is the environment conform gave it
(the mock's base URLs, model, window)."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: python -m ctxbed._bridge SOCKET", file=sys.stderr)
        return 2
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(sys.argv[1])
    env = {k: v for k, v in os.environ.items() if k.startswith("CTXBED_")}
    connection.sendall((json.dumps({"type": "env", "env": env}) + "\n").encode())

    out = sys.stdout.buffer

    def test_to_conform() -> None:
        with connection.makefile("rb") as from_test:
            for line in from_test:
                out.write(line)
                out.flush()
        # The test ended the run (it closed its side): so does the relay.
        os._exit(0)

    threading.Thread(target=test_to_conform, daemon=True).start()
    for line in sys.stdin.buffer:
        connection.sendall(line)
    # conform closed our input: the scenario is over, and every step was answered (conform
    # closes it only after the last answer), so the relay exits at once, as an adapter must.
    out.flush()
    connection.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
