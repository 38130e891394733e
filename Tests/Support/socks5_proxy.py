#!/usr/bin/env python3
"""socks5_proxy.py — a minimal SOCKS5 proxy for session-cleanup's tests (standard library only).

    socks5_proxy.py --port PORT [--log PATH]

Listens on 127.0.0.1:PORT. No authentication; CONNECT only; IPv4, IPv6 and domain-name
addresses (a name is resolved here, as socks5h:// asks). Refuses every destination that is
not loopback, so a test can never reach anything else through it. Appends one line per
CONNECT to --log: `CONNECT host:port` (the name as the client sent it, or the address).
"""
import argparse
import asyncio
import ipaddress
import socket
import struct


def loopback(host):
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def handle(reader, writer, log):
    try:
        version, count = await reader.readexactly(2)
        methods = await reader.readexactly(count)
        if version != 5 or 0 not in methods:
            writer.write(b"\x05\xff")
            return
        writer.write(b"\x05\x00")
        version, command, _, kind = await reader.readexactly(4)
        if kind == 1:
            host = socket.inet_ntop(socket.AF_INET, await reader.readexactly(4))
        elif kind == 4:
            host = socket.inet_ntop(socket.AF_INET6, await reader.readexactly(16))
        elif kind == 3:
            host = (await reader.readexactly((await reader.readexactly(1))[0])).decode("idna")
        else:
            writer.write(b"\x05\x08\x00\x01" + bytes(6))
            return
        port = struct.unpack("!H", await reader.readexactly(2))[0]
        if command != 1 or not loopback(host):
            writer.write(b"\x05\x02\x00\x01" + bytes(6))  # not allowed
            return
        with open(log, "a") as f:
            f.write(f"CONNECT {host}:{port}\n")
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(host, port)
        except OSError:
            writer.write(b"\x05\x05\x00\x01" + bytes(6))  # connection refused
            return
        writer.write(b"\x05\x00\x00\x01" + bytes(6))
        await writer.drain()
        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--log", default="/dev/null")
    a = p.parse_args()
    server = await asyncio.start_server(lambda r, w: handle(r, w, a.log), "127.0.0.1", a.port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
