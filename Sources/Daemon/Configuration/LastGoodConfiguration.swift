import Basics
import Configuration
import JSON
import Journal
import Sessions

/// The last configuration the daemon loaded without error, kept in the state directory
/// (`last-good-configuration.json`, one of the store's documents: mode 0600, replaced
/// atomically) after every start and reload that loaded the files: a typo in a drop-in followed
/// by a restart then neither ends the sessions nor leaves them without a daemon — the process
/// whose files are invalid at start runs on this one, loudly (``JournalEvents/configFallback``,
/// `STATUS=`, `status`), until the files are fixed and reloaded.
///
/// The files' paths and bytes, as read, so a fallback reports problems by the files' own names:
///
///     {"format":1,"files":[{"path":"/etc/session-cleanup/session-cleanup.conf","base64":"…"}]}
///
/// No secrets: the files hold none (credentials come from systemd, and the loader refuses
/// credentials written in a file).
package enum LastGoodConfiguration {
    /// The document's name in the state directory.
    package static let name = "last-good-configuration.json"
    /// The largest document read: far above any real configuration.
    static let maximumBytes = 4 << 20

    /// What a fallback start runs on: the configuration, the files it came from, and the
    /// problems it has now that the daemon accepts at a fallback (a credential the unit no
    /// longer loads, a setting the runtime libcurl cannot do): calls that need them fail, and
    /// their sessions are kept, rather than no daemon at all.
    package struct Fallback {
        /// The configuration.
        package let configuration: Configuration
        /// The files it was read from, in order (their contents as they were then).
        package let files: [String]
        /// Problems accepted at the fallback; empty when none.
        package let problems: [String]
    }

    /// Keeps the configuration read from `files` as the last good one: they are read again and
    /// kept only if they still load (a file changed meanwhile is not kept); a failure is
    /// journaled (the previous document stays).
    static func save(files: [String], to store: SessionStore, journal: any JournalSink) {
        guard store.readOnlyCause == nil else { return }
        do {
            var contents: [(path: String, bytes: [UInt8])] = []
            for file in files { contents.append((file, try FileReading.contents(of: file))) }
            _ = try ConfigurationLoader.load(files: contents)
            try store.writeDocument(name, encode(contents))
        } catch {
            journal.record(
                JournalEntry(
                    .storeWriteFailed,
                    "The last good configuration was not saved (a restart onto invalid files would not start): \(error)",
                    [JournalField(.storeFile, name), JournalField(.error, "\(error)")], priority: .warning))
        }
    }

    /// The last good configuration in `paths`' state directory; throws when there is none or it
    /// no longer loads (a parser of a newer version refusing it, say), naming why.
    package static func load(_ paths: DaemonPaths) throws(ConfigurationError) -> Fallback {
        let path = paths.stateDirectory + "/" + name
        let bytes: [UInt8]
        do {
            guard FileReading.exists(path) else {
                throw ConfigurationError(file: path, line: 0, "no last good configuration saved")
            }
            bytes = try FileReading.contents(of: path, limit: maximumBytes)
        } catch let error as ConfigurationError {
            throw error
        } catch {
            throw ConfigurationError(file: path, line: 0, "cannot read: \(error)")
        }
        guard let files = decode(bytes) else {
            throw ConfigurationError(file: path, line: 0, "damaged (not the document this daemon writes)")
        }
        let configuration = try ConfigurationLoader.load(files: files)
        var problems: [String] = []
        do {
            try DaemonConfigurationLoader.checkCredentials(of: configuration, in: paths.credentialsDirectory)
        } catch {
            problems.append(error.description)
        }
        do {
            try LibcurlSupportCheck.check(configuration)
        } catch {
            problems.append(error.description)
        }
        return Fallback(configuration: configuration, files: files.map(\.path), problems: problems)
    }

    /// The document's bytes.
    static func encode(_ files: [(path: String, bytes: [UInt8])]) -> [UInt8] {
        let document: JSONValue = [
            "format": 1,
            "files": .array(
                files.map { .object(["path": .string($0.path), "base64": .string(Base64.encode($0.bytes))]) }),
        ]
        return (try? JSONWriter.text(of: document)) ?? []
    }

    /// The files a document holds, or nil when it is not one this daemon writes.
    static func decode(_ bytes: [UInt8]) -> [(path: String, bytes: [UInt8])]? {
        guard let document = try? StrictJSON.parse(bytes), document["format"] == .integer(1),
            case .array(let entries)? = document["files"]
        else { return nil }
        var files: [(path: String, bytes: [UInt8])] = []
        for entry in entries {
            guard case .string(let path)? = entry["path"], case .string(let text)? = entry["base64"],
                let contents = Base64.decode(text)
            else { return nil }
            files.append((path, contents))
        }
        return files
    }
}
