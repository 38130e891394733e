import Daemon
import FuzzSupport
import Vocabulary

/// The state directory's `http-versions` record: any bytes a damaged or hand-edited file may hold.
///
/// Invariants beyond "no crash": what reads, written again, is the same bytes up to a missing
/// last newline, reads back equal, and keeps at most the limit; what does not read names a line
/// of the input and never quotes it (the planted secret); merging what it holds into itself
/// changes nothing and needs no write.
enum HTTPVersionsFuzz {
    static func run(_ input: [UInt8]) {
        let document: HTTPVersionDocument
        do {
            document = try HTTPVersionDocument(decoding: input)
        } catch {
            let lines = input.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).count
            Fuzz.require((1...max(1, lines)).contains(error.line), "damage names line \(error.line) of \(lines)")
            Fuzz.require(!PlantedSecret.leaks(into: error.description), "damage quotes the file: \(error)")
            return
        }
        let written = document.encoded
        Fuzz.require(
            written == input || written == input + [UInt8(ascii: "\n")], "written again, the record differs")
        Fuzz.require(document.entries.count <= HTTPVersionDocument.limit, "more origins than the limit")
        guard let again = try? HTTPVersionDocument(decoding: written) else {
            Fuzz.require(false, "what was written does not read back")
            return
        }
        Fuzz.require(again == document, "read back, the record differs")
        var told: [HTTPOrigin: Bool] = [:]
        for entry in document.entries { told[entry.origin] = entry.http2 }
        Fuzz.require(document.holds(told), "the record does not hold its own entries")
        Fuzz.require(
            Set(document.merging(told).entries.map(\.origin)) == Set(told.keys), "merging itself lost an origin")
    }
}
