#!/usr/bin/env python3
"""A stand-in for systemd-journald, for session-cleanup's integration tests.

    unshare --mount --propagation private -- \\
        fake_journald.py --out-dir DIR [--stall] -- COMMAND [ARG...]

Runs as root inside a private mount namespace (unshare above): mounts a tmpfs over /run (so
the host's /run is untouched and unseen), binds journald's native socket at
/run/systemd/journal/socket, and starts COMMAND with its stderr connected to a stream socket
and JOURNAL_STREAM naming it — exactly how systemd starts a service whose output goes to the
journal, so session-cleanup chooses the native protocol.

--stall      read nothing from either socket until COMMAND has exited (a journald that has
             stopped reading: its queue fills and stays full). Otherwise both are read at once.
--rcvbuf N   SO_RCVBUF of the native socket (default: the kernel's).

Files in DIR:
  pid       COMMAND's pid, once it runs
  exited    "STATUS MONOTONIC_NS USER_US SYSTEM_US" written the moment COMMAND exits
            (CLOCK_MONOTONIC; COMMAND's CPU time from wait4)
  entries   one JSON object per native entry received ({"FIELD": "value" or [values...]}),
            including entries passed as a sealed memfd (SCM_RIGHTS); written after exit
  stderr    every byte COMMAND wrote to stderr
Exits with COMMAND's exit status (128 + signal if it was killed).
"""
import argparse
import array
import json
import os
import select
import socket
import struct
import subprocess
import sys
import time

SOCKET_PATH = "/run/systemd/journal/socket"


def parse_entry(data):
    """journald's native protocol: NAME=value lines, or NAME\\n + 64-bit LE length + value + \\n."""
    fields = {}
    i = 0
    while i < len(data):
        end = data.find(b"\n", i)
        if end < 0:
            raise ValueError("entry not terminated by a newline")
        line = data[i:end]
        if b"=" in line:
            name, value = line.split(b"=", 1)
            i = end + 1
        else:
            name = line
            (length,) = struct.unpack("<Q", data[end + 1:end + 9])
            value = data[end + 9:end + 9 + length]
            if data[end + 9 + length:end + 10 + length] != b"\n":
                raise ValueError("binary field %r not followed by a newline" % name)
            i = end + 10 + length
        key, text = name.decode(), value.decode("utf-8", "replace")
        if key in fields:
            if not isinstance(fields[key], list):
                fields[key] = [fields[key]]
            fields[key].append(text)
        else:
            fields[key] = text
    return fields


def receive_all(sock, out):
    """Every datagram waiting on the native socket, decoded, as JSON lines into `out`."""
    count = 0
    while True:
        try:
            data, ancillary, _, _ = sock.recvmsg(1 << 24, socket.CMSG_SPACE(16 * 4))
        except BlockingIOError:
            return count
        fds = array.array("i")
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
        for fd in fds:
            with os.fdopen(fd, "rb") as memfd:
                memfd.seek(0)
                data = memfd.read()
        try:
            entry = parse_entry(data)
            entry["_FAKE_MEMFD"] = "1" if len(fds) else "0"
        except ValueError as error:
            entry = {"_FAKE_BAD_ENTRY": str(error)}
        out.write(json.dumps(entry) + "\n")
        count += 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--stall", action="store_true")
    parser.add_argument("--rcvbuf", type=int)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no COMMAND")

    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", "/run"], check=True)
    os.makedirs(os.path.dirname(SOCKET_PATH))
    native = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    if args.rcvbuf:
        native.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, args.rcvbuf)
    native.bind(SOCKET_PATH)
    native.setblocking(False)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    ours.setblocking(False)
    info = os.fstat(theirs.fileno())
    env = dict(os.environ, JOURNAL_STREAM="%d:%d" % (info.st_dev, info.st_ino))
    child = subprocess.Popen(command, stderr=theirs.fileno(), env=env)
    theirs.close()
    with open(os.path.join(args.out_dir, "pid.tmp"), "w") as f:
        f.write(str(child.pid))
    os.rename(os.path.join(args.out_dir, "pid.tmp"), os.path.join(args.out_dir, "pid"))

    entries = open(os.path.join(args.out_dir, "entries"), "w")
    stderr = open(os.path.join(args.out_dir, "stderr"), "wb")

    def read_stream():
        while True:
            try:
                chunk = ours.recv(1 << 16)
            except BlockingIOError:
                return
            if not chunk:
                return
            stderr.write(chunk)

    while True:
        pid, wait_status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid == child.pid:
            break
        if args.stall:
            time.sleep(0.002)
            continue
        select.select([native, ours], [], [], 0.05)
        receive_all(native, entries)
        read_stream()
    exited_at = time.monotonic_ns()
    status = os.waitstatus_to_exitcode(wait_status)
    status = status if status >= 0 else 128 - status
    with open(os.path.join(args.out_dir, "exited.tmp"), "w") as f:
        f.write("%d %d %d %d" % (status, exited_at, usage.ru_utime * 1e6, usage.ru_stime * 1e6))
    os.rename(os.path.join(args.out_dir, "exited.tmp"), os.path.join(args.out_dir, "exited"))
    receive_all(native, entries)
    read_stream()
    entries.close()
    stderr.close()
    sys.exit(status)


if __name__ == "__main__":
    main()
