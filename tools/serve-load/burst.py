#!/usr/bin/env python3
"""Memory through a burst: `ctxbed serve` takes N requests of M MiB at once, and its resident
set is read at the peak and then after 1, 5, 12, 20 and 30 seconds idle.

Usage: tools/serve-load/burst.py BINARY [--requests N] [--megabytes M]
(release build; BENCHMARKS.md, "serve under pressure", quotes it)."""

import argparse
import http.client
import threading
import time

import load


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--requests", type=int, default=4)
    parser.add_argument("--megabytes", type=int, default=31)
    arguments = parser.parse_args()
    server, host, port = load.start(arguments.binary, None)
    body = load.huge_body(arguments.megabytes)
    print("at start", round(load.rss_kib(server.pid) / 1024), "MiB")
    statuses = []

    def one():
        connection = http.client.HTTPConnection(host, port, timeout=600)
        statuses.append(load.post(connection, body))
        connection.close()

    threads = [threading.Thread(target=one) for _ in range(arguments.requests)]
    for thread in threads:
        thread.start()
    peak = 0
    while any(thread.is_alive() for thread in threads):
        peak = max(peak, load.rss_kib(server.pid))
        time.sleep(0.05)
    print("statuses", sorted(statuses), "peak", round(peak / 1024), "MiB")
    idle = time.time()
    for mark in (1, 5, 12, 20, 30):
        while time.time() - idle < mark:
            time.sleep(0.1)
        print(f"after {mark} s idle", round(load.rss_kib(server.pid) / 1024), "MiB")
    server.kill()


if __name__ == "__main__":
    main()
