#!/usr/bin/env python3
"""backlog_server.py — the "small accept queue" end-session server: Python's http.server with
its default listen backlog, `request_queue_size = 5`, as a small service written in a few lines
would have it.

    backlog_server.py [--threading] [--http11] [--backlog 5] [--service-ms 0]
                      [--host 127.0.0.1] [--port 0] --ready-file PATH

- Without --threading: http.server.HTTPServer, one request at a time on one thread (accept,
  read, answer, close: BaseHTTPRequestHandler speaks HTTP/1.0 unless --http11).
  With --threading: http.server.ThreadingHTTPServer (a thread per connection, as
  `python3 -m http.server` uses since Python 3.7).
- /user/<KEY>/endsession (any method) is answered 200 {"success": true} after --service-ms;
  GET /_stats answers {"requests", "unique_keys", "connections", "server"} at once.
- The listen backlog is what makes it interesting: 50 connections opened at once overflow an
  accept queue of 5 (6 on Linux), the kernel drops the SYNs, and the clients retransmit them
  after 1 s, 3 s, 7 s ...
- --port 0 picks a free port, written to --ready-file once listening. SIGTERM prints the
  /_stats JSON to stdout and exits 0.
"""
import argparse
import hashlib
import http.server
import json
import os
import signal
import sys
import threading
import time

counts = {"requests": 0, "connections": 0}
keys = set()
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    service_s = 0.0

    def setup(self):
        super().setup()
        with lock:
            counts["connections"] += 1

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        if self.path.startswith("/_stats"):
            body = json.dumps(stats()).encode()
        else:
            parts = self.path.split("?")[0].split("/")
            with lock:
                counts["requests"] += 1
                if len(parts) > 2 and parts[1] == "user" and parts[2]:
                    keys.add(hashlib.sha256(parts[2].encode()).digest()[:8])
            if self.service_s:
                time.sleep(self.service_s)
            body = b'{"success": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = _answer

    def log_message(self, format, *args):  # noqa: A002 — http.server's signature
        pass


def stats():
    with lock:
        return {"requests": counts["requests"], "unique_keys": len(keys), "connections": counts["connections"],
                "server": SERVER_KIND}


SERVER_KIND = None


def main():
    global SERVER_KIND
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threading", action="store_true", help="ThreadingHTTPServer (default: HTTPServer)")
    p.add_argument("--http11", action="store_true", help="answer in HTTP/1.1 with keep-alive (default: 1.0)")
    p.add_argument("--backlog", type=int, default=5, help="request_queue_size (listen backlog)")
    p.add_argument("--service-ms", type=float, default=0.0)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--ready-file", required=True)
    args = p.parse_args()

    base = http.server.ThreadingHTTPServer if args.threading else http.server.HTTPServer

    class Server(base):
        request_queue_size = args.backlog
        allow_reuse_address = True
        daemon_threads = True

    Handler.service_s = args.service_ms / 1000.0
    if args.http11:
        Handler.protocol_version = "HTTP/1.1"
    SERVER_KIND = f"{base.__name__}, request_queue_size={args.backlog}, {Handler.protocol_version}"
    server = Server((args.host, args.port), Handler)

    def on_term(_signum, _frame):
        print(json.dumps(stats()), flush=True)
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    tmp = f"{args.ready_file}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(f"{server.server_address[1]}\n")
    os.rename(tmp, args.ready_file)
    print(f"backlog_server: {SERVER_KIND} on {args.host} port {server.server_address[1]}", file=sys.stderr)
    server.serve_forever()


if __name__ == "__main__":
    main()
