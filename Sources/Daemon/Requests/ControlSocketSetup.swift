import Configuration
import Control
import EventLoop
import Journal
import Systemd

/// Where the daemon's control socket comes from: the one systemd passes (`session-cleanup.socket`,
/// socket activation), or, when the daemon was started without it (by hand), one it creates in
/// its runtime directory with `[Control] SocketMode=` and `SocketGroup=`.
enum ControlSocketSetup {
    /// Serves the socket on `loop`; returns the server and the activated socket, if it was one.
    static func open(
        paths: DaemonPaths, control: ControlSettings, loop: EventLoop, handler: any ControlRequestHandler,
        journal: any JournalSink
    ) throws -> (ControlServer, ActivatedSocket?) {
        guard let activated = try ActivatedSocket.fromServiceManager() else {
            try DaemonPaths.makeDirectory(paths.runtimeDirectory)
            let server = try ControlServer(
                socketPath: paths.controlSocket, socketMode: control.socketMode, socketGroup: control.socketGroup,
                loop: loop, handler: handler, journal: journal)
            return (server, nil)
        }
        activated.reportSettingsNotApplied(control, instance: paths.instance, to: journal)
        let server = try ControlServer(
            adopting: activated.fd, socketPath: activated.path, loop: loop, handler: handler, journal: journal)
        return (server, activated)
    }
}
