"""cpu_app.py — a CPU-bound "end session" WSGI app, for gunicorn (fleet_bench.py's cpu-bound
scenario stands in for an identity provider that hashes a password or a token per request).

    CPU_APP_RECORD=/path/record CPU_APP_ITERATIONS=N \
        gunicorn -w 2 -k gthread --threads 8 -b 127.0.0.1:PORT --chdir Benchmarks/fleet cpu_app:app

GET|POST /user/<KEY>/endsession: runs PBKDF2-HMAC-SHA256 for CPU_APP_ITERATIONS iterations (the
benchmark calibrates them to ~0.25 s of one core's CPU with `python3 cpu_app.py --calibrate
MS`), then answers 200 {"success": true}. hashlib releases the GIL while it hashes, as in
Django's password hashers, so a worker's threads share the cores rather than the GIL: the
server's capacity is its CPU (2 workers x 8 threads on a 2-core machine: ~8 calls/s at most).

Each request appends two lines to CPU_APP_RECORD (O_APPEND, one write(2) each, so lines from
the workers and threads never interleave; mode 0600):

    R <CLOCK_MONOTONIC seconds> <key id>     when the app began the request (gunicorn's
                                             gthread worker reads a request only when one of
                                             its threads takes it up: under load that is long
                                             after it arrived, so count R lines only once the
                                             server is idle to know how many it was sent)
    C <CLOCK_MONOTONIC seconds> <key id>     when the work was done, the session "ended" —
                                             whether or not the client is still waiting

<key id> is the first 16 hex digits of the key's SHA-256 (never the key). A request never
notices that its client gave up: like most servers, the work goes on, which is what makes a
re-sent request cost the server twice. `read_record(path)` parses the file for the benchmark.
GET /_health answers "ok" at once (readiness).
"""
import hashlib
import json
import os
import sys
import time

_SALT = b"session-cleanup-bench"
_ITERATIONS = int(os.environ.get("CPU_APP_ITERATIONS", "0") or 0)
_RECORD = os.environ.get("CPU_APP_RECORD")
_fd = None


def key_id(key):
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def calibrate(cpu_ms, probe_iterations=20000):
    """Iterations of PBKDF2-HMAC-SHA256 that take cpu_ms of this thread's CPU (median of 5)."""
    rates = []
    for _ in range(5):
        t0 = time.thread_time()
        hashlib.pbkdf2_hmac("sha256", b"calibration", _SALT, probe_iterations)
        rates.append(probe_iterations / max(time.thread_time() - t0, 1e-6))
    rates.sort()
    return max(1, int(rates[2] * cpu_ms / 1000.0))


def _record(kind, kid):
    global _fd
    if not _RECORD:
        return
    if _fd is None:  # per process: gunicorn forks the workers after importing nothing of ours
        _fd = os.open(_RECORD, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    os.write(_fd, f"{kind} {time.monotonic():.6f} {kid}\n".encode())


def _reply(start_response, status, body, content_type="application/json"):
    data = body.encode()
    start_response(status, [("Content-Type", content_type), ("Content-Length", str(len(data)))])
    return [data]


def app(environ, start_response):
    path = environ.get("PATH_INFO", "")
    if path == "/_health":
        return _reply(start_response, "200 OK", "ok\n", "text/plain")
    parts = path.split("/")
    # ['', 'user', KEY, 'endsession']
    if len(parts) < 3 or parts[1] != "user" or not parts[2]:
        return _reply(start_response, "404 Not Found", json.dumps({"error": "not found"}))
    length = int(environ.get("CONTENT_LENGTH") or 0)
    if length:
        environ["wsgi.input"].read(length)
    kid = key_id(parts[2])
    _record("R", kid)
    hashlib.pbkdf2_hmac("sha256", parts[2].encode(), _SALT, _ITERATIONS or 100000)
    _record("C", kid)
    return _reply(start_response, "200 OK", json.dumps({"success": True}))


def read_record(path):
    """{key id: {"requests": [t, ...], "completions": [t, ...]}} from a record file."""
    keys = {}
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) != 3:
                    continue  # a line being written as we read
                entry = keys.setdefault(parts[2], {"requests": [], "completions": []})
                entry["requests" if parts[0] == "R" else "completions"].append(float(parts[1]))
    except FileNotFoundError:
        pass
    return keys


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--calibrate":
        print(calibrate(float(sys.argv[2])))
    else:
        sys.exit("usage: cpu_app.py --calibrate MS   (prints PBKDF2 iterations for MS of CPU)")
