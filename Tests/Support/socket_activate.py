#!/usr/bin/env python3
"""socket_activate.py — a minimal socket activator for the integration tests, like systemd's.

  socket_activate.py SOCKET_PATH [--fdname NAME] [--not-a-socket] -- COMMAND [ARG...]

Listens on SOCKET_PATH (a Unix stream socket, mode 0666) and keeps it across the commands it is
given on stdin, one per line, answering each on stdout:
  start   runs COMMAND with the socket as fd 3, LISTEN_FDS=1, LISTEN_PID=<its pid>,
          LISTEN_FDNAMES=NAME (default "control")            -> "started PID"
  wait    waits for the running COMMAND                       -> "exited STATUS" (or "signal N")
With --not-a-socket, fd 3 is a regular file instead (a broken activation).
End of input kills a COMMAND still running and exits. Connections made while no COMMAND runs
wait in the socket's backlog, as with systemd.
"""
import os
import signal
import socket
import sys
import tempfile


def main(argv):
    if "--" not in argv:
        raise SystemExit(__doc__)
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1:]
    path = options[0]
    fdname = options[options.index("--fdname") + 1] if "--fdname" in options else "control"
    if "--not-a-socket" in options:
        passed = tempfile.TemporaryFile()
        fd = passed.fileno()
    else:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        os.chmod(path, 0o666)
        listener.listen(64)
        fd = listener.fileno()
    child = None
    print("listening", flush=True)
    for line in sys.stdin:
        verb = line.strip()
        if verb == "start":
            child = os.fork()
            if child == 0:
                os.dup2(fd, 3)
                os.set_inheritable(3, True)
                env = dict(os.environ, LISTEN_FDS="1", LISTEN_PID=str(os.getpid()), LISTEN_FDNAMES=fdname)
                os.execve(command[0], command, env)
            print("started %d" % child, flush=True)
        elif verb == "wait" and child:
            _, status = os.waitpid(child, 0)
            child = None
            if os.WIFSIGNALED(status):
                print("signal %d" % os.WTERMSIG(status), flush=True)
            else:
                print("exited %d" % os.WEXITSTATUS(status), flush=True)
    if child:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
