#!/usr/bin/env python3
"""loadcheck.py — concurrency check client for loadserver (stdlib only, 127.0.0.1 only).

curl --parallel tops out at 300 transfers, so this client is what puts 10,000+ requests in
flight at once:

  loadcheck.py --port P --connections 10000                 # 10k conns, 1 request each
  loadcheck.py --port P --connections 10 --requests 2000 --pipeline   # 20k pipelined

All connections are opened first; then every connection sends at the same moment
(pipelined: all its requests in one write), so the server holds connections*requests
pending replies at once when --pipeline is given (otherwise one per connection).
Prints a JSON summary: client-side latency percentiles (send -> full reply, in ms; they
include this client's own event-loop delay) and the server's /_stats.
"""
import argparse
import asyncio
import json
import sys
import time


async def read_response(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    body = await reader.readexactly(length)
    return head.split(b" ", 2)[1], body


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--connections", type=int, default=1000)
    p.add_argument("--requests", type=int, default=1, help="requests per connection")
    p.add_argument("--pipeline", action="store_true", help="send all requests of a connection at once")
    p.add_argument("--key-prefix", default="lc")
    a = p.parse_args()

    connect_gate = asyncio.Semaphore(512)  # do not overrun the listen backlog with SYNs
    go = asyncio.Event()
    conns = []

    async def connect():
        async with connect_gate:
            conns.append(await asyncio.open_connection(a.host, a.port))

    t0 = time.perf_counter()
    await asyncio.gather(*(connect() for _ in range(a.connections)))
    t_conn = time.perf_counter() - t0

    lat, errors = [], 0

    def req(i, j):
        return ("GET /user/%s-%d-%d/endsession HTTP/1.1\r\nHost: x\r\n\r\n" % (a.key_prefix, i, j)).encode()

    async def worker(i, reader, writer):
        nonlocal errors
        await go.wait()
        if a.pipeline:
            start = time.perf_counter()
            writer.write(b"".join(req(i, j) for j in range(a.requests)))
            for _ in range(a.requests):
                status, body = await read_response(reader)
                lat.append(time.perf_counter() - start)
                errors += status != b"200" or body != b'{"success": true}'
        else:
            for j in range(a.requests):
                start = time.perf_counter()
                writer.write(req(i, j))
                status, body = await read_response(reader)
                lat.append(time.perf_counter() - start)
                errors += status != b"200" or body != b'{"success": true}'
        writer.close()

    tasks = [asyncio.ensure_future(worker(i, r, w)) for i, (r, w) in enumerate(conns)]
    await asyncio.sleep(0)
    t1 = time.perf_counter()
    go.set()
    await asyncio.gather(*tasks)
    t_run = time.perf_counter() - t1

    r, w = await asyncio.open_connection(a.host, a.port)
    w.write(b"GET /_stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    _, body = await read_response(r)
    w.close()

    lat.sort()
    n = len(lat)
    pct = lambda q: round(lat[min(n - 1, int(n * q))] * 1000, 1)
    print(json.dumps({
        "connections": a.connections, "requests": n, "errors": errors,
        "connect_s": round(t_conn, 2), "run_s": round(t_run, 2),
        "latency_ms": {"min": pct(0), "p50": pct(.5), "p90": pct(.9), "p99": pct(.99), "max": pct(1)},
        "server": json.loads(body),
    }))
    return 1 if errors or n != a.connections * a.requests else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
