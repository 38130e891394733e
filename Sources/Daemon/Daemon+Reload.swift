import Configuration
import Control
import Glibc
import Journal
import Systemd

extension Daemon {
    /// What a reload did.
    enum ReloadOutcome {
        /// The configuration from `files` is in force; `notes` say what did not take effect.
        case applied(files: [String], notes: [String])
        /// The files (or a credential) are invalid: the previous configuration is kept.
        case refused(ConfigurationError)
    }

    /// The `reload` request (`systemctl reload` runs it), for root and the daemon's own user
    /// (`ExecReload=` runs as the service's user), only while running: answered once the new
    /// configuration is in force, or with why it was not applied.
    func reloadRequested(by peer: PeerCredentials, reply: ControlReply) {
        guard peer.uid == 0 || peer.uid == geteuid() else {
            reply(.failure(.forbidden, "reload is for root and the daemon's own user (uid \(geteuid()))"))
            return
        }
        guard case .running = phase else {
            reply(.failure(.stopping, "the daemon is stopping or restarting: nothing to reload"))
            return
        }
        switch reload() {
        case .applied(let files, let notes): reply(.reloaded(files: files, notes: notes))
        case .refused(let error): reply(.failure(.invalidConfiguration, "configuration not reloaded: \(error)"))
        }
    }

    /// Reads the configuration again (SIGHUP, or the `reload` request).
    @discardableResult
    func reload() -> ReloadOutcome {
        notifier.send([.reloading(loop.clock.now()), .status("Reloading configuration")])
        journal.record(JournalEntry(.reloading, "Reloading configuration"))
        let change: ActiveConfiguration.Change
        do {
            change = try configuration.reload(paths)
        } catch {
            journal.record(
                JournalEntry(
                    .reloadFailed, "Configuration not reloaded, keeping the previous one: \(error)",
                    [JournalField(.error, error.description), JournalField(.configFile, error.file)]))
            notifier.send([.ready, .status(readyStatus + " (reload failed: \(error))")])
            return .refused(error)
        }
        var notes: [String] = []
        if let activatedSocket = started?.activatedSocket {
            notes += activatedSocket.reportSettingsNotApplied(
                configuration.current.control, instance: paths.instance, to: journal)
        } else if change.controlSocketChanged {
            let note =
                "[Control] SocketMode=/SocketGroup= changes take effect at the next start (the socket stays as it is)"
            journal.record(JournalEntry(.reloadPartial, note))
            notes.append(note)
        }
        if let unconfigured = reportUnconfiguredEndpoints() { notes.append(unconfigured.note) }
        if let store = started?.committer.store {
            LastGoodConfiguration.save(files: configuration.files, to: store, journal: journal)
        }
        journal.record(
            JournalEntry(
                .reloaded, "Configuration reloaded from \(configuration.files.count) file(s)",
                [JournalField(.configFile, configuration.files.joined(separator: " "))]))
        started?.metrics.sessionsChanged()  // written at once where TextfileDirectory= now says
        started?.sleep.configure(endSessions: configuration.current.sleep.endSessions)
        notifier.send([.ready, .status(readyStatus)])
        return .applied(files: configuration.files, notes: notes)
    }

    /// Journals the stored sessions that name endpoints no longer configured (at start and at each
    /// reload); returns them, if any.
    @discardableResult
    func reportUnconfiguredEndpoints() -> UnconfiguredEndpoints? {
        guard let store = started?.committer.store else { return nil }
        let unconfigured = UnconfiguredEndpoints(
            usage: store.endpointUsage.lazy.map { ($0.key, $0.value) }, configuration: configuration.current)
        unconfigured.record(in: journal)
        return unconfigured.isEmpty ? nil : unconfigured
    }
}
