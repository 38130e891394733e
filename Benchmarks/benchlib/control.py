"""The daemon's control socket (docs/control-protocol.md): bulk registration, one-off requests,
the count of stored sessions."""
import asyncio
import json
import socket
import time

from .common import BULK_CONNECTIONS, BenchError


def register_line(key, endpoint_json):
    return ('{"op":"register","key":"%s","endpoints":%s,"label":"bench"}\n' % (key, endpoint_json)).encode()


def check_reply(line):
    if b'"ok":true' in line:
        return None
    try:
        reply = json.loads(line)
    except ValueError:
        return f"unreadable reply {line[:200]!r}"
    return None if reply.get("ok") is True else f"{reply.get('code')}: {reply.get('error')}"


async def _register_bulk(path, prefix, n, endpoints, connections, depth, timeout):
    # endpoints: the names every session gets, or a function of the session's number giving them
    names_of = endpoints if callable(endpoints) else None
    endpoint_json = None if names_of else json.dumps(endpoints)
    errors = []
    done = 0

    async def worker(c):
        nonlocal done
        reader, writer = await asyncio.open_unix_connection(str(path), limit=1 << 20)
        mine = range(c, n, connections)
        sent = got = 0
        try:
            while got < len(mine):
                if sent < len(mine) and sent - got <= depth // 2:
                    batch = min(depth - (sent - got), len(mine) - sent)
                    writer.write(b"".join(
                        register_line(f"{prefix}-{mine[sent + k]}",
                                      endpoint_json or json.dumps(names_of(mine[sent + k])))
                        for k in range(batch)))
                    sent += batch
                line = await reader.readline()
                if not line:
                    raise BenchError(f"control connection closed after {got} replies")
                error = check_reply(line)
                if error:
                    errors.append(error)
                got += 1
                done += 1
        finally:
            writer.close()

    workers = [asyncio.ensure_future(worker(c)) for c in range(min(connections, n))]
    try:
        await asyncio.wait_for(asyncio.gather(*workers), timeout)
    except asyncio.TimeoutError:
        raise BenchError(f"registration timed out after {timeout} s ({done} of {n} acknowledged)")
    return errors


def register_bulk(daemon, prefix, n, endpoints, pipeline, connections=BULK_CONNECTIONS, timeout=600):
    """Registers n sessions (keys prefix-0 … prefix-(n-1)) through the control socket, each at
    `endpoints` (a list of names, or a function of i giving session i's); returns seconds
    taken.  Raises BenchError unless every one was acknowledged with ok: true."""
    if n == 0:
        return 0.0
    t0 = time.monotonic()
    try:
        errors = asyncio.run(_register_bulk(daemon.control, prefix, n, endpoints, connections, max(1, pipeline),
                                            timeout))
    except OSError as e:
        raise BenchError(f"control socket {daemon.control}: {e.strerror or e}") from None
    if errors:
        raise BenchError(f"{len(errors)} of {n} registrations refused; first: {errors[0]}")
    return time.monotonic() - t0


def control_request(path, request, timeout=60):
    """One request on its own connection; returns the decoded reply."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(path))
        s.sendall((json.dumps(request) + "\n").encode())
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            data += chunk
    return json.loads(data)


def stored_count(daemon):
    """How many sessions the daemon says it holds: status's count if it has one, else list's length."""
    reply = control_request(daemon.control, {"op": "status"})
    status = reply.get("status") or {}
    for key in ("sessions", "session_count", "stored", "registered"):
        value = status.get(key)
        if isinstance(value, int):
            return value
        if isinstance(value, dict):
            for sub in ("stored", "total", "count"):
                if isinstance(value.get(sub), int):
                    return value[sub]
    reply = control_request(daemon.control, {"op": "list"})
    if not reply.get("ok"):
        raise BenchError(f"list failed: {reply}")
    return len(reply.get("sessions") or [])
