"""Durable registrations (scenario `register`): registrations/s through the control socket from
1 and 16 clients, each strictly request → reply; then every acknowledged one must still be
there after SIGKILL and a restart."""
import asyncio
import json
import socket
import time

from ..common import BenchError
from ..control import check_reply, register_line, stored_count
from ..daemon import Daemon
from ..loadserver import LoadServer


def registration(bench, duration):
    server = LoadServer(bench, tag="ls-reg")
    d = Daemon(bench, "reg", [("auth", server.url("/user/{session}/endsession"))])
    acked = 0
    try:
        d.start()
        endpoint_json = json.dumps(["auth"])

        def sequential():
            nonlocal acked
            n = 0
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(10)
                s.connect(str(d.control))
                f = s.makefile("rb")
                t0 = time.monotonic()
                while time.monotonic() - t0 < duration and n < 1_000_000:
                    s.sendall(register_line(f"seq-{n}", endpoint_json))
                    error = check_reply(f.readline())
                    if error:
                        raise BenchError(f"registration {n} refused: {error}")
                    n += 1
                elapsed = time.monotonic() - t0
            acked += n
            return {"clients": 1, "registrations": n, "seconds": elapsed, "per_s": n / elapsed}

        async def concurrent(clients):
            counts = [0] * clients
            t_end = time.monotonic() + duration

            async def client(c):
                reader, writer = await asyncio.open_unix_connection(str(d.control))
                try:
                    while time.monotonic() < t_end and counts[c] < 1_000_000:
                        writer.write(register_line(f"c{c}-{counts[c]}", endpoint_json))
                        error = check_reply(await reader.readline())
                        if error:
                            raise BenchError(f"registration refused: {error}")
                        counts[c] += 1
                finally:
                    writer.close()

            t0 = time.monotonic()
            await asyncio.wait_for(asyncio.gather(*(client(c) for c in range(clients))), duration + 30)
            return sum(counts), time.monotonic() - t0

        def parallel16():
            nonlocal acked
            n, elapsed = asyncio.run(concurrent(16))
            acked += n
            return {"clients": 16, "registrations": n, "seconds": elapsed, "per_s": n / elapsed}

        bench.attempt("register", "1 client, one at a time", sequential)
        bench.attempt("register", "16 clients, one at a time each", parallel16)

        def durable():
            # Every acknowledged registration must still be there after SIGKILL + restart.
            d.kill()
            again = Daemon(bench, "reg-again", [("auth", server.url("/user/{session}/endsession"))],
                           state_dir=d.state_dir)
            try:
                again.start()
                count = stored_count(again)
            finally:
                again.kill()
            if count != acked:
                raise BenchError(f"after SIGKILL and restart the daemon holds {count}, {acked} were acknowledged")
            return {"registrations": count}

        bench.attempt("register", "acknowledged = stored after kill", durable)
        calls = server.stop()["requests"]
        if calls:
            bench.add({"scenario": "register", "name": "no calls without a stop run", "ok": False,
                      "error": f"server counted {calls} requests"})
    except BenchError as e:
        bench.add({"scenario": "register", "name": "registration", "ok": False, "error": str(e)})
    finally:
        d.kill()
        server.child.kill()
