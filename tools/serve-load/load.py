#!/usr/bin/env python3
"""Measures `ctxbed serve` under load: memory after many small and a few huge requests, the
request rate with `--record` as the record grows, and a small request's latency while a huge one
is being read. Standard library only. Figures go to standard output as one JSON object.

    python3 tools/serve-load/load.py target/release/ctxbed [--small 100000] [--huge 3]
"""

import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

MOCK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "serve-load.toml")
SMALL = json.dumps({"model": "serve-load", "max_tokens": 16,
                    "messages": [{"role": "user", "content": "ping"}]}).encode()


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def start(binary, record):
    command = [binary, "serve", MOCK, "--time-scale", "0"]
    if record:
        command += ["--record", record]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = server.stdout.readline().strip()
    if not line.startswith("listening on http://"):
        server.kill()
        sys.exit(f"the server did not start: {line!r}")
    host, port = line.removeprefix("listening on http://").rsplit(":", 1)
    return server, host, int(port)


def post(connection, body):
    connection.request("POST", "/v1/chat/completions", body=body,
                       headers={"content-type": "application/json"})
    response = connection.getresponse()
    response.read()
    return response.status


def small_run(host, port, count, pid, window=1000):
    """Sends `count` small requests on one connection; returns the rate (requests/s) of the
    first and of the last `window` requests, and the server's RSS (MiB) at each fifth of the
    run."""
    connection = http.client.HTTPConnection(host, port)
    marks = []
    rss = []
    started = time.perf_counter()
    for n in range(count):
        post(connection, SMALL)
        if (n + 1) % window == 0:
            marks.append(time.perf_counter())
        if (n + 1) % max(count // 5, 1) == 0:
            rss.append(round(rss_kib(pid) / 1024, 1))
    connection.close()
    first = window / (marks[0] - started)
    last = window / (marks[-1] - marks[-2]) if len(marks) > 1 else first
    return first, last, rss


def huge_body(megabytes):
    text = ("lorem ipsum dolor sit amet " * (megabytes * 1024 * 1024 // 27 + 1))[: megabytes * 1024 * 1024]
    return json.dumps({"model": "serve-load", "max_tokens": 16,
                       "messages": [{"role": "user", "content": text}]}).encode()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--small", type=int, default=100_000)
    parser.add_argument("--huge", type=int, default=3)
    parser.add_argument("--megabytes", type=int, default=31)
    parser.add_argument("--no-record", action="store_true", help="serve without --record")
    arguments = parser.parse_args()
    figures = {}
    with tempfile.TemporaryDirectory() as scratch:
        record = None if arguments.no_record else os.path.join(scratch, "record.jsonl")
        server, host, port = start(arguments.binary, record)
        try:
            figures["rss_start_mib"] = rss_kib(server.pid) / 1024
            first, last, rss = small_run(host, port, arguments.small, server.pid)
            figures["rss_by_fifth_mib"] = rss
            figures["rate_first_1000"] = round(first)
            figures[f"rate_at_{arguments.small}"] = round(last)
            figures[f"rss_after_{arguments.small}_small_mib"] = round(rss_kib(server.pid) / 1024, 1)
            body = huge_body(arguments.megabytes)
            connection = http.client.HTTPConnection(host, port, timeout=600)
            for _ in range(arguments.huge):
                post(connection, body)
            figures[f"rss_after_{arguments.huge}_huge_mib"] = round(rss_kib(server.pid) / 1024, 1)

            # A small request's latency while a huge one is being answered.
            latencies = []
            done = threading.Event()

            timing = {}

            def huge():
                other = http.client.HTTPConnection(host, port, timeout=600)
                began = time.perf_counter()
                post(other, body)
                timing["huge"] = time.perf_counter() - began
                done.set()

            thread = threading.Thread(target=huge)
            thread.start()
            probe = http.client.HTTPConnection(host, port, timeout=600)
            time.sleep(0.05)
            while not done.is_set():
                began = time.perf_counter()
                post(probe, SMALL)
                latencies.append(time.perf_counter() - began)
            thread.join()
            figures["small_latency_during_huge_max_ms"] = round(max(latencies or [0]) * 1000, 1)
            figures["small_requests_during_huge"] = len(latencies)
            figures["huge_request_ms"] = round(timing.get("huge", 0) * 1000, 1)
            if record:
                with open(record) as lines:
                    figures["record_lines"] = sum(1 for _ in lines)
        finally:
            server.terminate()
            server.wait(timeout=60)
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
