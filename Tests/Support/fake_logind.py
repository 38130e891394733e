#!/usr/bin/python3
"""A stand-in for systemd-logind on a private D-Bus bus, for session-cleanup's sleep tests.

Owns org.freedesktop.login1 and serves what the daemon uses of it:
  Manager.Inhibit(what, who, why, mode) -> h   a pipe's write end; the read end is watched,
                                               so the lock's release (the fd closed) is seen
  Properties.Get(Manager, InhibitDelayMaxUSec) -> t   --delay-usec
  signal Manager.PrepareForSleep(b)            sent on the commands below

Commands, one per line on stdin: "sleep" (PrepareForSleep true), "resume" (false), "quit".
Events, one per line appended to --events (flushed at once):
  ready | inhibit N WHAT WHO MODE | released N | delay-asked | signal true|false

Needs Debian's python3-dbus and python3-gi: run it with /usr/bin/python3.
"""
import argparse
import os
import sys

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

MANAGER = "org.freedesktop.login1.Manager"


class Manager(dbus.service.Object):
    def __init__(self, bus, delay_usec, events):
        super().__init__(bus, "/org/freedesktop/login1")
        self.delay_usec = delay_usec
        self.events = events
        self.locks = 0

    def note(self, line):
        self.events.write(line + "\n")
        self.events.flush()

    @dbus.service.method(MANAGER, in_signature="ssss", out_signature="h")
    def Inhibit(self, what, who, why, mode):
        self.locks += 1
        number = self.locks
        read_end, write_end = os.pipe()
        self.note(f"inhibit {number} {what} {who} {mode}")
        GLib.io_add_watch(read_end, GLib.IO_IN | GLib.IO_HUP | GLib.IO_ERR, self.watch, number)
        lock = dbus.types.UnixFd(write_end)  # a copy of its own, sent with the reply
        os.close(write_end)
        return lock

    def watch(self, fd, condition, number):
        if condition & GLib.IO_IN and os.read(fd, 64):
            return True
        self.note(f"released {number}")
        os.close(fd)
        return False

    @dbus.service.method("org.freedesktop.DBus.Properties", in_signature="ss", out_signature="v")
    def Get(self, interface, name):
        if interface == MANAGER and name == "InhibitDelayMaxUSec":
            self.note("delay-asked")
            return dbus.UInt64(self.delay_usec, variant_level=1)
        raise dbus.exceptions.DBusException(
            f"no property {interface}.{name}", name="org.freedesktop.DBus.Error.UnknownProperty")

    @dbus.service.signal(MANAGER, signature="b")
    def PrepareForSleep(self, start):
        self.note("signal " + ("true" if start else "false"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--address", required=True)
    parser.add_argument("--events", required=True)
    parser.add_argument("--delay-usec", type=int, default=5_000_000)
    options = parser.parse_args()
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(options.address)
    events = open(options.events, "a", encoding="utf-8")
    manager = Manager(bus, options.delay_usec, events)
    name = dbus.service.BusName("org.freedesktop.login1", bus)
    loop = GLib.MainLoop()

    def command(source, condition):
        line = sys.stdin.readline()
        if not line or line.strip() == "quit":
            loop.quit()
            return False
        if line.strip() == "sleep":
            manager.PrepareForSleep(True)
        elif line.strip() == "resume":
            manager.PrepareForSleep(False)
        return True

    GLib.io_add_watch(sys.stdin.fileno(), GLib.IO_IN | GLib.IO_HUP, command)
    manager.note("ready")
    loop.run()
    del name


if __name__ == "__main__":
    main()
