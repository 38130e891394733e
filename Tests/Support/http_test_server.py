#!/usr/bin/env python3
"""A small keep-alive HTTP/1.1 server for session-cleanup's integration tests and benchmarks.

Standard library only (asyncio). Prints "PORT <n>" on stdout once listening, then serves until
killed. What it does depends on the request path:

  /json                   200 {"success": true}
  /status/<code>[/...]    that status, small JSON body
  /delay/<ms>[/...]       200 {"success": true} after <ms> milliseconds
  /never[/...]            reads the request and never answers (keeps the connection open)
  /big/<bytes>            200 with a body of <bytes> bytes, streamed
  /retry/<seconds>        503 with "Retry-After: <seconds>"
  /echo                   200 "<METHOD> <body length>"
  /user-agent             200 with the request's User-Agent header's value (empty if none)
  /cut                    headers promising 1000 bytes, 10 bytes, then the connection closes
  /stats                  200 {"connections": <accepted so far>, "requests": <served so far>}
  anything else           404
"""

import argparse
import asyncio
import ssl
import sys

STATS = {"connections": 0, "requests": 0}
REASONS = {200: "OK", 404: "Not Found", 500: "Internal Server Error", 503: "Service Unavailable"}


def response(status, body, extra=b""):
    reason = REASONS.get(status, "Status").encode()
    head = b"HTTP/1.1 %d %s\r\nContent-Length: %d\r\nContent-Type: application/json\r\n%s\r\n" % (
        status, reason, len(body), extra)
    return head + body


class Connection(asyncio.Protocol):
    def connection_made(self, transport):
        STATS["connections"] += 1
        self.transport = transport
        self.buffer = b""
        self.busy = False
        self.writable = None
        self.loop = asyncio.get_running_loop()

    def data_received(self, data):
        self.buffer += data
        self.next_request()

    def next_request(self):
        while not self.busy:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end].decode("latin-1").split("\r\n")
            length = 0
            for line in head[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            if len(self.buffer) < end + 4 + length:
                return
            body = self.buffer[end + 4:end + 4 + length]
            self.buffer = self.buffer[end + 4 + length:]
            method, path, _ = head[0].split(" ", 2)
            STATS["requests"] += 1
            self.user_agent = next((line.partition(":")[2].strip() for line in head[1:]
                                    if line.partition(":")[0].strip().lower() == "user-agent"), "")
            self.handle(method, path, body)

    def pause_writing(self):
        self.writable = asyncio.get_running_loop().create_future()

    def resume_writing(self):
        if self.writable is not None and not self.writable.done():
            self.writable.set_result(None)
        self.writable = None

    def connection_lost(self, exc):
        self.resume_writing()

    async def stream(self, size):
        """Writes a body of `size` bytes with flow control, stopping if the client goes away."""
        self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size)
        chunk = b"x" * 65536
        while size > 0 and not self.transport.is_closing():
            self.transport.write(chunk[:size])
            size -= min(size, len(chunk))
            if self.writable is not None:
                await self.writable
        self.busy = False
        self.next_request()

    def send(self, data):
        if not self.transport.is_closing():
            self.transport.write(data)
        self.busy = False
        self.next_request()

    def handle(self, method, path, body):
        parts = [p for p in path.split("?")[0].split("/") if p]
        first = parts[0] if parts else ""
        ok = b'{"success": true}'
        if first == "json":
            self.send(response(200, ok))
        elif first == "status" and len(parts) > 1:
            self.send(response(int(parts[1]), b'{"error": "status %s"}' % parts[1].encode()))
        elif first == "delay" and len(parts) > 1:
            self.busy = True
            self.loop.call_later(int(parts[1]) / 1000.0, self.send, response(200, ok))
        elif first == "never":
            self.busy = True
        elif first == "big" and len(parts) > 1:
            self.busy = True
            asyncio.ensure_future(self.stream(int(parts[1])))
        elif first == "retry" and len(parts) > 1:
            self.send(response(503, b'{"error": "busy"}', b"Retry-After: %s\r\n" % parts[1].encode()))
        elif first == "user-agent":
            self.send(response(200, self.user_agent.encode("latin-1")))
        elif first == "echo":
            self.send(response(200, b"%s %d" % (method.encode(), len(body))))
        elif first == "cut":
            self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789")
            self.transport.close()
        elif first == "stats":
            self.send(response(200, b'{"connections": %d, "requests": %d}' % (
                STATS["connections"], STATS["requests"])))
        else:
            self.send(response(404, b'{"error": "not found"}'))


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--cert")
    parser.add_argument("--key")
    args = parser.parse_args()
    context = None
    if args.cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.cert, args.key)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Connection, args.host, args.port, ssl=context, backlog=4096)
    port = server.sockets[0].getsockname()[1]
    print("PORT %d" % port, flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
