#!/usr/bin/env python3
"""Scriptable "end session" HTTP/1.1 server for session-cleanup integration/system tests.

Standard library only (asyncio, ssl, json, hashlib).  Runs on Python >= 3.9, including
Debian 12's /usr/bin/python3 (3.11).  NOTE: in a minimal Debian container install the
`python3` package, not only `python3-minimal`: asyncio and json live in
libpython3.11-stdlib.

Never binds anything but the address given with --host (default 127.0.0.1) and never
opens outgoing connections.

Usage
-----
  endsession_server.py [--host 127.0.0.1|::1] [--port 0] [--ready-file PATH]
                       [--tls-cert CERT.pem --tls-key KEY.pem] [--token-file F]
                       [--latency-ms N] [--log PATH] [--stats-file PATH]
                       [--expect-keys FILE] [--idle-timeout-s S] [--max-requests-per-conn N]
  endsession_server.py --hash KEY...      # print the hash the server uses for KEY

--port 0 picks a free port; the chosen port is written (atomically: temp file + rename)
to --ready-file once the socket is listening, so a test waits for that file to appear.

Endpoints
---------
  GET|POST|PUT|DELETE /user/<KEY>/endsession        key from the path segment (URL-decoded)
  GET|POST ... /endsession?session=<KEY>             key from the query (any path ending in
                                                     /endsession)
  POST .../endsession  {"session": "<KEY>"}          key from a JSON body
      (precedence: path segment, then query, then body; no key -> 400)
  GET  /_stats     counters as JSON (see "Stats")
  POST /_reset     forget calls, requests, per-key state (flaky/busy "first call" again),
                   ended/abandoned and max_in_flight; connection counters and the
                   expected-key set are kept
  POST /_expect    {"keys": ["k1", ...]} declare the sessions a test expects to be ended
                   (replaces any --expect-keys set); see "expected" in the stats

Behaviour, chosen by the prefix of the session key
---------------------------------------------------
  ok-…          200 {"success": true}
  no-…          200 {"success": false}
  flaky-…       1st call (per key, since start or /_reset) 500, later calls 200 success
  busy-…        1st call 429 with "Retry-After: 1", later calls 200 success
  slow<ms>-…    e.g. slow3000-x: waits <ms> milliseconds, then 200 success
  ambiguous<n>-… 200 with the n-th reply that is not unambiguously a success (AMBIGUOUS below):
                {"success":"false"}, "0", {"ok":false}, [false], 1e-400, a duplicated key
  hang-…        reads the request, never answers; the connection stays open until the
                client closes it (or the server stops)
  reset-…       sends headers with Content-Length: 1000 and a partial body, then resets
                the connection (SO_LINGER 0 -> RST)
  badjson-…     200 with body `not json{`
  huge-…        200 with a 10 MiB body, Content-Length given, streamed in 64 KiB writes.
                The body IS valid JSON {"success": true, "padding": "xxx…"}: a client
                without a response size cap therefore "succeeds", which a test can detect.
  hugechunked-… same 10 MiB body, but Transfer-Encoding: chunked (no Content-Length)
  gone-…        404 {"success": false, "error": "unknown session"}
  auth-…        200 success only if "Authorization: Bearer <token>" equals the content of
                --token-file (surrounding whitespace stripped); else 401.  Without
                --token-file every auth- call gets 401.
  client-…      200 success only if the OAuth client of --client-file (client_id:client_secret)
                authenticated as --client-auth says: basic (RFC 6749 §2.3.1: Basic, each part
                form-urldecoded after base64), basic-raw (Basic, parts as they are) or post
                (client_id and client_secret fields of a form body); else 401.
  anything else 200 {"success": true}
--latency-ms N delays every end-session reply by N ms (added to slow<ms>; /_stats and the
other control endpoints answer at once).

Refused connections are NOT simulated here: point the client at a closed port.  To get
one that is very likely closed, bind a TCP socket to 127.0.0.1:0, read its port and close
it without listening (nothing else on a test host grabs that port within milliseconds;
the kernel hands out ephemeral ports in sequence):
    python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1]);s.close()'

Privacy: raw session keys never appear in the log or the stats.  A key is represented by
the first 12 hex digits of sha256(key as UTF-8) -- see `--hash KEY`.

Stats (GET /_stats, and the --stats-file written on SIGTERM/SIGINT/normal exit and on SIGUSR1)
-----
  {"calls": <end-session requests received>,
   "by_key_hash": {"<hash>": {"calls": n, "successes": n, "behaviour": "ok"}, ...},
   "ended": [sorted hashes that got at least one success reply],
   "abandoned": [hashes whose reply was not delivered: the client was gone first],
   "requests": <all HTTP requests incl. control>, "connections": <accepted>,
   "open_connections": n, "in_flight": n, "max_in_flight": n,
   "expected": {...}}          # only when keys were declared (--expect-keys / /_expect):
       {"count": n, "missing": [hashes with 0 successes], "duplicated": [hashes with > 1],
        "unexpected": [ended hashes not declared], "all_ended_at_least_once": bool,
        "all_ended_exactly_once": bool}
A "success reply" means {"success": true} written completely to the socket (for huge-…
the whole 10 MiB; a client that aborts the download does not count as ended).

Log (--log PATH): one JSON line per request, written when the request has been read:
  {"t": epoch, "time": ISO-8601 UTC, "conn": id, "seq": n-th request on that connection,
   "tls": bool, "method": "GET", "path": "/user/<hash:ab12cd34ef56>/endsession",
   "query": "...", (session= value redacted the same way) "headers": [names only],
   "body_len": n, "key_hash": "ab12cd34ef56" | null, "behaviour": "ok", "status": 200 | null}
Control requests are logged too (behaviour "control").
"""

import argparse
import asyncio
import hashlib
import hmac
import itertools
import json
import os
import re
import signal
import socket
import ssl
import struct
import sys
import time
from urllib.parse import parse_qsl, quote, unquote, unquote_plus
import base64
import binascii

HASH_LEN = 12
MAX_HEAD = 64 * 1024          # request line + headers
MAX_BODY = 1024 * 1024        # request body
HUGE_SIZE = 10 * 1024 * 1024  # huge-… response body
CHUNK = 64 * 1024

REASONS = {100: "Continue", 200: "OK", 400: "Bad Request", 401: "Unauthorized",
           404: "Not Found", 405: "Method Not Allowed", 411: "Length Required",
           413: "Content Too Large", 429: "Too Many Requests", 431: "Request Header Fields Too Large",
           500: "Internal Server Error", 501: "Not Implemented"}

# Checked in order; "hugechunked" must come before "huge".
PREFIXES = ("ok", "no", "flaky", "busy", "hang", "reset", "badjson", "hugechunked",
            "huge", "gone", "auth", "client")
SLOW_RE = re.compile(r"slow(\d+)-")
AMBIGUOUS_RE = re.compile(r"ambiguous(\d+)-")
# Replies an outside review found counted as "ended": each must leave the session kept.
AMBIGUOUS = (b'{"success":"false"}', b'"0"', b'{"ok":false}', b'[false]', b'1e-400',
             b'{"success":true,"success":false}')

SUCCESS = b'{"success": true}'
FAILURE = b'{"success": false}'


def key_hash(key):
    """Stable, non-reversible stand-in for a session key in logs and stats."""
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:HASH_LEN]


def classify(key):
    """Return (behaviour name, extra delay in ms) for a session key."""
    m = SLOW_RE.match(key)
    if m:
        return "slow", int(m.group(1))
    m = AMBIGUOUS_RE.match(key)
    if m:
        return "ambiguous" + m.group(1), 0
    for p in PREFIXES:
        if key.startswith(p + "-"):
            return p, 0
    return "default", 0


class BadRequest(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class Request:
    __slots__ = ("method", "target", "version", "headers", "header_names", "body")

    def __init__(self, method, target, version, headers, header_names, body):
        self.method, self.target, self.version = method, target, version
        self.headers = headers            # lower-case name -> value (last one wins)
        self.header_names = header_names  # names as sent, in order (for the log)
        self.body = body

    def wants_keep_alive(self):
        conn = self.headers.get("connection", "").lower()
        if self.version == "HTTP/1.0":
            return "keep-alive" in conn
        return "close" not in conn


async def read_request(reader, writer):
    """Read one request. Returns None on a clean close before any byte of a request."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            return None
        raise BadRequest(400, "truncated request head")
    except asyncio.LimitOverrunError:
        raise BadRequest(431, "request head too large")

    lines = head[:-4].decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest(400, "bad request line")
    method, target, version = parts
    headers, names = {}, []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise BadRequest(400, "bad header line")
        lname, value = name.lower(), value.strip()
        if lname == "content-length" and lname in headers and headers[lname] != value:
            raise BadRequest(400, "conflicting Content-Length")
        headers[lname] = value
        names.append(name)

    chunked = "chunked" in headers.get("transfer-encoding", "").lower()
    length = 0
    if not chunked and "content-length" in headers:
        try:
            length = int(headers["content-length"])
        except ValueError:
            raise BadRequest(400, "bad Content-Length")
        if length < 0:
            raise BadRequest(400, "bad Content-Length")
        if length > MAX_BODY:
            raise BadRequest(413, "request body too large")
    # libcurl sends "Expect: 100-continue" for larger POST bodies and would otherwise
    # wait ~1 s before sending the body anyway.
    if (chunked or length) and headers.get("expect", "").lower() == "100-continue":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    if chunked:
        body = bytearray()
        while True:
            size_line = await reader.readuntil(b"\r\n")
            try:
                size = int(size_line.split(b";")[0].strip(), 16)
            except ValueError:
                raise BadRequest(400, "bad chunk size")
            if size == 0:
                # Skip trailers up to the empty line.
                while (await reader.readuntil(b"\r\n")) != b"\r\n":
                    pass
                break
            if len(body) + size > MAX_BODY:
                raise BadRequest(413, "request body too large")
            body += await reader.readexactly(size)
            await reader.readexactly(2)  # CRLF after the chunk data
        body = bytes(body)
    else:
        body = await reader.readexactly(length) if length else b""
    return Request(method, target, version, headers, names, body)


def response_head(status, length, keep_alive, extra=(), content_type="application/json"):
    lines = ["HTTP/1.1 %d %s" % (status, REASONS.get(status, "Status")),
             "Content-Type: " + content_type]
    if length is None:
        lines.append("Transfer-Encoding: chunked")
    else:
        lines.append("Content-Length: %d" % length)
    lines.append("Connection: " + ("keep-alive" if keep_alive else "close"))
    lines.extend(extra)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def huge_body_parts():
    """The 10 MiB JSON body in CHUNK-sized pieces (valid JSON, exactly HUGE_SIZE bytes)."""
    prefix, suffix = b'{"success": true, "padding": "', b'"}'
    pad = HUGE_SIZE - len(prefix) - len(suffix)
    yield prefix
    block = b"x" * CHUNK
    while pad > 0:
        n = min(pad, CHUNK)
        yield block[:n]
        pad -= n
    yield suffix


class Stats:
    def __init__(self):
        self.reset()
        self.connections = 0
        self.open_connections = 0
        self.in_flight = 0
        self.expected = None  # set of hashes, or None

    def reset(self):
        self.calls = 0
        self.requests = 0
        self.per_key = {}        # hash -> {"calls", "successes", "behaviour"}
        self.abandoned = set()
        self.max_in_flight = getattr(self, "in_flight", 0)

    def snapshot(self):
        ended = sorted(h for h, v in self.per_key.items() if v["successes"] > 0)
        out = {
            "calls": self.calls,
            "by_key_hash": self.per_key,
            "ended": ended,
            "abandoned": sorted(self.abandoned),
            "requests": self.requests,
            "connections": self.connections,
            "open_connections": self.open_connections,
            "in_flight": self.in_flight,
            "max_in_flight": self.max_in_flight,
        }
        if self.expected is not None:
            succ = {h: self.per_key.get(h, {}).get("successes", 0) for h in self.expected}
            missing = sorted(h for h, n in succ.items() if n == 0)
            dup = sorted(h for h, n in succ.items() if n > 1)
            out["expected"] = {
                "count": len(self.expected),
                "missing": missing,
                "duplicated": dup,
                "unexpected": sorted(set(ended) - self.expected),
                "all_ended_at_least_once": not missing,
                "all_ended_exactly_once": not missing and not dup,
            }
        return out


def write_atomically(path, data):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(data)
    os.replace(tmp, path)


class Server:
    def __init__(self, args):
        self.args = args
        self.stats = Stats()
        self.conn_ids = itertools.count(1)
        self.conn_tasks = set()
        self.token = None
        if args.token_file:
            with open(args.token_file) as f:
                self.token = f.read().strip()
        self.client = None
        if args.client_file:
            with open(args.client_file) as f:
                self.client = tuple(f.read().strip().split(":", 1))
        if args.expect_keys:
            with open(args.expect_keys) as f:
                self.stats.expected = {key_hash(l.strip()) for l in f if l.strip()}
        self.log = open(args.log, "a", buffering=1) if args.log else None
        self.tls = bool(args.tls_cert)

    def client_authenticated(self, req):
        """Whether req carries --client-file's client as --client-auth says (see module doc)."""
        if self.client is None:
            return False
        mode = self.args.client_auth
        if mode == "post":
            fields = dict(parse_qsl(req.body.decode("utf-8", "replace"), keep_blank_values=True))
            got = (fields.get("client_id"), fields.get("client_secret"))
            return "authorization" not in req.headers and got == self.client
        header = req.headers.get("authorization", "")
        if not header.startswith("Basic "):
            return False
        try:
            pair = base64.b64decode(header[len("Basic "):], validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return False
        if ":" not in pair:
            return False
        if mode == "basic":
            got = tuple(unquote_plus(part) for part in pair.split(":", 1))
        else:
            got = tuple(pair.split(":", 1))
        return got == self.client

    # ----------------------------------------------------------------- logging/stats
    def log_request(self, conn_id, seq, req, path, query, key_h, behaviour, status):
        if not self.log:
            return
        now = time.time()
        rec = {
            "t": round(now, 6),
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + ".%03dZ" % (int(now * 1000) % 1000),
            "conn": conn_id, "seq": seq, "tls": self.tls,
            "method": req.method, "path": path, "query": query,
            "headers": req.header_names, "body_len": len(req.body),
            "key_hash": key_h, "behaviour": behaviour, "status": status,
        }
        self.log.write(json.dumps(rec) + "\n")

    def write_stats_file(self):
        if self.args.stats_file:
            write_atomically(self.args.stats_file, json.dumps(self.stats.snapshot(), indent=1) + "\n")

    # ----------------------------------------------------------------- connections
    async def handle_connection(self, reader, writer):
        task = asyncio.current_task()
        self.conn_tasks.add(task)
        conn_id = next(self.conn_ids)
        st = self.stats
        st.connections += 1
        st.open_connections += 1
        close_mode = "close"  # or "aborted": transport already gone, nothing to close
        try:
            seq = 0
            while True:
                if self.args.idle_timeout_s and seq > 0:
                    try:
                        req = await asyncio.wait_for(read_request(reader, writer), self.args.idle_timeout_s)
                    except asyncio.TimeoutError:
                        break  # idle keep-alive connection: close it like real servers do
                else:
                    req = await read_request(reader, writer)
                if req is None:
                    break
                seq += 1
                st.requests += 1
                keep = req.wants_keep_alive()
                if self.args.max_requests_per_conn and seq >= self.args.max_requests_per_conn:
                    keep = False
                result = await self.dispatch(req, reader, writer, conn_id, seq, keep)
                if result != "keep":
                    close_mode = result
                    break
        except BadRequest as e:
            body = json.dumps({"success": False, "error": str(e)}).encode()
            try:
                writer.write(response_head(e.status, len(body), False) + body)
                await writer.drain()
            except (ConnectionError, OSError):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                ssl.SSLError, OSError):
            pass
        except asyncio.CancelledError:
            pass  # server shutting down
        finally:
            st.open_connections -= 1
            self.conn_tasks.discard(task)
            if close_mode != "aborted":
                writer.close()
                try:
                    await asyncio.wait_for(writer.wait_closed(), 1)
                except (Exception, asyncio.CancelledError):
                    pass

    async def send_json(self, writer, status, obj, keep):
        body = json.dumps(obj).encode() if not isinstance(obj, bytes) else obj
        writer.write(response_head(status, len(body), keep) + body)
        await writer.drain()
        return "keep" if keep else "close"

    async def dispatch(self, req, reader, writer, conn_id, seq, keep):
        path, _, query = req.target.partition("?")
        if path in ("/_stats", "/_reset", "/_expect"):
            self.log_request(conn_id, seq, req, path, query, None, "control", 200)
            if path == "/_stats" and req.method == "GET":
                return await self.send_json(writer, 200, self.stats.snapshot(), keep)
            if path == "/_reset" and req.method == "POST":
                self.stats.reset()
                return await self.send_json(writer, 200, {"reset": True}, keep)
            if path == "/_expect" and req.method in ("POST", "PUT"):
                try:
                    keys = json.loads(req.body or b"{}")["keys"]
                    self.stats.expected = {key_hash(str(k)) for k in keys}
                except (ValueError, KeyError, TypeError):
                    return await self.send_json(writer, 400, {"error": 'want {"keys": [...]}'}, keep)
                return await self.send_json(writer, 200, {"expected": len(self.stats.expected)}, keep)
            return await self.send_json(writer, 405, {"error": "method not allowed"}, keep)

        segments = path.split("/")
        if segments[-1] != "endsession":
            self.log_request(conn_id, seq, req, path, query, None, "no-route", 404)
            return await self.send_json(writer, 404, {"success": False, "error": "no such route"}, keep)

        # Find the key: /user/<key>/endsession, then ?session=, then JSON body.
        key, log_path = None, path
        if len(segments) == 4 and segments[0] == "" and segments[1] == "user" and segments[2]:
            key = unquote(segments[2])
            log_path = "/user/<hash:%s>/endsession" % key_hash(key)
        qpairs = parse_qsl(query, keep_blank_values=True)
        for k, v in qpairs:
            if k == "session" and key is None and v:
                key = v
        log_query = "&".join(
            "%s=%s" % (quote(k), "<hash:%s>" % key_hash(v) if k == "session" else quote(v))
            for k, v in qpairs)
        if key is None and req.body:
            try:
                doc = json.loads(req.body)
                if isinstance(doc, dict) and isinstance(doc.get("session"), str) and doc["session"]:
                    key = doc["session"]
            except ValueError:
                pass
        if key is None:
            self.log_request(conn_id, seq, req, log_path, log_query, None, "no-key", 400)
            return await self.send_json(writer, 400, {"success": False, "error": "missing session key"}, keep)

        return await self.end_session(req, reader, writer, conn_id, seq, keep, key, log_path, log_query)

    async def end_session(self, req, reader, writer, conn_id, seq, keep, key, log_path, log_query):
        st = self.stats
        h = key_hash(key)
        behaviour, extra_ms = classify(key)
        entry = st.per_key.setdefault(h, {"calls": 0, "successes": 0, "behaviour": behaviour})
        entry["calls"] += 1
        st.calls += 1
        first = entry["calls"] == 1

        # Decide the reply now (so the log line can carry the status).
        status, body, extra, success = 200, SUCCESS, (), True
        if behaviour == "no":
            body, success = FAILURE, False
        elif behaviour == "flaky" and first:
            status, body, success = 500, b'{"success": false, "error": "flaky"}', False
        elif behaviour == "busy" and first:
            status, body, success = 429, b'{"success": false, "error": "busy"}', False
            extra = ("Retry-After: 1",)
        elif behaviour == "badjson":
            body, success = b"not json{", False
        elif behaviour.startswith("ambiguous"):
            body, success = AMBIGUOUS[int(behaviour[len("ambiguous"):]) % len(AMBIGUOUS)], False
        elif behaviour == "gone":
            status, body, success = 404, b'{"success": false, "error": "unknown session"}', False
        elif behaviour == "auth":
            got = req.headers.get("authorization", "")
            if self.token is None or not hmac.compare_digest(got.encode(), ("Bearer " + self.token).encode()):
                status, body, success = 401, b'{"success": false, "error": "unauthorized"}', False
                extra = ('WWW-Authenticate: Bearer realm="endsession"',)
        elif behaviour == "client":
            if not self.client_authenticated(req):
                status, body, success = 401, b'{"success": false, "error": "unauthorized client"}', False
                extra = ('WWW-Authenticate: Basic realm="endsession"',)
        elif behaviour in ("hang", "reset"):
            status, success = None, False

        self.log_request(conn_id, seq, req, log_path, log_query, h, behaviour, status)

        st.in_flight += 1
        st.max_in_flight = max(st.max_in_flight, st.in_flight)
        try:
            delay = (self.args.latency_ms + extra_ms) / 1000.0
            if delay > 0:
                await asyncio.sleep(delay)

            if behaviour == "hang":
                # Never answer; swallow whatever the client sends until it closes.
                while await reader.read(65536):
                    pass
                return "close"

            # A client that timed out and closed its socket while we waited: note it and
            # do not count the (undeliverable) reply as a success.
            if reader.at_eof() or writer.is_closing():
                st.abandoned.add(h)
                return "close"

            if behaviour == "reset":
                writer.write(response_head(200, 1000, True) + b'{"success": tr')
                await writer.drain()
                await asyncio.sleep(0.05)  # let the partial reply reach the client first
                sock = writer.get_extra_info("socket")
                # Linger on with timeout 0: close() discards the connection with an RST.
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()
                return "aborted"

            if behaviour in ("huge", "hugechunked"):
                chunked = behaviour == "hugechunked"
                writer.write(response_head(200, None if chunked else HUGE_SIZE, keep))
                for part in huge_body_parts():
                    if chunked:
                        writer.write(b"%x\r\n" % len(part) + part + b"\r\n")
                    else:
                        writer.write(part)
                    await writer.drain()
                if chunked:
                    writer.write(b"0\r\n\r\n")
                await writer.drain()
                entry["successes"] += 1
                return "keep" if keep else "close"

            writer.write(response_head(status, len(body), keep, extra) + body)
            await writer.drain()
            if success:
                entry["successes"] += 1
            return "keep" if keep else "close"
        except (ConnectionError, OSError):
            st.abandoned.add(h)
            return "aborted"
        finally:
            st.in_flight -= 1


def parse_args(argv):
    p = argparse.ArgumentParser(description="Scriptable end-session HTTP/1.1 test server (see module doc).")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 = pick a free port")
    p.add_argument("--ready-file", help="write the port here once listening (atomic)")
    p.add_argument("--tls-cert", help="PEM certificate (chain); enables HTTPS")
    p.add_argument("--tls-key", help="PEM private key for --tls-cert")
    p.add_argument("--token-file", help="bearer token expected for auth- keys")
    p.add_argument("--client-file", help="client_id:client_secret expected for client- keys")
    p.add_argument("--client-auth", choices=("basic", "basic-raw", "post"), default="basic",
                   help="how client- calls must authenticate the client")
    p.add_argument("--latency-ms", type=int, default=0, help="delay before every end-session reply")
    p.add_argument("--log", help="append one JSON line per request")
    p.add_argument("--stats-file", help="write stats JSON here on exit / SIGTERM / SIGUSR1")
    p.add_argument("--expect-keys", help="file with one session key per line that should get ended")
    p.add_argument("--idle-timeout-s", type=float, default=0,
                   help="close keep-alive connections idle this long (0 = never)")
    p.add_argument("--max-requests-per-conn", type=int, default=0,
                   help="answer the N-th request on a connection with Connection: close (0 = no limit)")
    p.add_argument("--hash", nargs="+", metavar="KEY", help="print the hash of each KEY and exit")
    args = p.parse_args(argv)
    if bool(args.tls_cert) != bool(args.tls_key):
        p.error("--tls-cert and --tls-key go together")
    return args


async def amain(args):
    server = Server(args)
    ctx = None
    if args.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)

    loop = asyncio.get_running_loop()

    def exception_handler(loop, context):
        # TLS handshakes refused by the client (untrusted-cert tests) are expected.
        exc = context.get("exception")
        if isinstance(exc, (ssl.SSLError, ConnectionError)):
            return
        loop.default_exception_handler(context)
    loop.set_exception_handler(exception_handler)

    srv = await asyncio.start_server(server.handle_connection, host=args.host, port=args.port,
                                     ssl=ctx, limit=MAX_HEAD, backlog=1024, reuse_address=True)
    port = srv.sockets[0].getsockname()[1]
    if args.ready_file:
        write_atomically(args.ready_file, "%d\n" % port)
    print("endsession_server: listening on %s port %d (%s)" % (args.host, port, "https" if ctx else "http"),
          file=sys.stderr, flush=True)

    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGUSR1, server.write_stats_file)
    try:
        await stop.wait()
    finally:
        srv.close()
        # Python < 3.12 does not close accepted connections on server.close().
        for t in list(server.conn_tasks):
            t.cancel()
        await asyncio.gather(*server.conn_tasks, return_exceptions=True)
        server.write_stats_file()
        if server.log:
            server.log.close()


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.hash:
        for k in args.hash:
            print(key_hash(k))
        return 0
    asyncio.run(amain(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
