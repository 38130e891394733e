#!/usr/bin/env python3
"""End every session listed in URLS_FILE (one http:// URL per line) with a GET, 256 at a time.

The script a user might write instead of running a daemon: standard library only, asyncio,
HTTP/1.1 keep-alive (idle connections go back to a pool), a semaphore for the concurrency.
Prints "ended N of M" and exits non-zero if any call failed.
"""
import asyncio
import json
import sys
from urllib.parse import urlsplit


async def main(path, limit=256):
    urls = [line.strip() for line in open(path) if line.strip()]
    gate, pool, ended = asyncio.Semaphore(limit), [], 0

    async def end(url):
        nonlocal ended
        u = urlsplit(url)
        async with gate:
            reader, writer = pool.pop() if pool else await asyncio.open_connection(u.hostname, u.port or 80)
            try:
                target = u.path + ("?" + u.query if u.query else "")
                writer.write(f"GET {target} HTTP/1.1\r\nHost: {u.netloc}\r\n\r\n".encode())
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
                length = next((int(h.split(":", 1)[1]) for h in head if h.lower().startswith("content-length:")), 0)
                body = await reader.readexactly(length)
            except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                writer.close()
                return
            pool.append((reader, writer))
            try:
                ended += head[0].split(" ")[1] == "200" and json.loads(body).get("success") is True
            except ValueError:
                pass

    await asyncio.gather(*(end(url) for url in urls))
    for _, writer in pool:
        writer.close()
    print(f"ended {ended} of {len(urls)}")
    return 0 if ended == len(urls) else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1])))
