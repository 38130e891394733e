import Basics
import Glibc
import JSON
import Runs
import Vocabulary

/// The last stop run's documents read straight from the state directory, for a client while the
/// daemon is stopped: `status` and `report` must not start the daemon to show what is on disk.
/// Read-only: the store is neither opened nor locked (a daemon starting meanwhile is unaffected).
package enum StoppedDaemonDocuments {
    /// The largest results document read (the record keeps at most `RunRecord.maxResults` lines).
    static let resultsLimit = 256 << 20

    /// The facts of the last stop run (`last-stop-run.json`) in `directory`, as `status` shows
    /// them; nil when no stop run has been recorded. Throws when the directory or the document
    /// cannot be read (`EACCES` for a user who is neither root nor the service's user), or
    /// when it does not parse.
    package static func lastStopFacts(in directory: String) throws(SystemCallError) -> JSONValue? {
        guard let bytes = try readIfPresent(directory + "/" + LastStopRunFacts.name, limit: 1 << 20) else {
            return nil
        }
        guard let facts = try? StrictJSON.parse(bytes) else {
            throw SystemCallError("parse", directory + "/" + LastStopRunFacts.name, errno: EBADMSG)
        }
        return facts
    }

    /// The last stop run's report as `report` shows it to `uid` (root sees every session); nil
    /// when none is recorded, or the two documents are of different runs. Throws as
    /// ``lastStopFacts(in:)``.
    package static func lastStopReport(in directory: String, visibleTo uid: UInt32) throws(SystemCallError)
        -> JSONValue?
    {
        guard case .object(let facts)? = try lastStopFacts(in: directory),
            let results = try readIfPresent(directory + "/" + LastStopRunResults.name, limit: resultsLimit),
            let record = LastStopRunDocument.decode(facts: facts, results: results)
        else { return nil }
        return record.report(visibleTo: uid)
    }

    /// The file's bytes, or nil when it (or its directory) does not exist.
    private static func readIfPresent(_ path: String, limit: Int) throws(SystemCallError) -> [UInt8]? {
        do throws(SystemCallError) {
            return try FileReading.contents(of: path, limit: limit)
        } catch {
            guard error.errno == ENOENT else { throw error }
            return nil
        }
    }
}
