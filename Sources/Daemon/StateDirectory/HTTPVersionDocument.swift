import Sessions
import Vocabulary

/// The HTTP versions the daemon's HTTPS origins answered in, kept in the state directory
/// (`http-versions`, one of the store's documents: mode 0600, replaced atomically), so that a
/// later run, after a restart or at the next boot, knows an HTTP/1.1 origin at once and skips the
/// HTTP/2 probe (``HTTPEngine/knownHTTP1Origins``). Only a hint: missing, damaged or out of
/// date, it costs at most what a run without it does (the probe), or for an origin that has
/// turned to HTTP/2 since, a connection per call until the first reply in HTTP/2.
///
/// Text, a header line, then one origin per line: those the last engine to write it was told
/// of, by name, then the ones it kept from before:
///
///     session-cleanup-http-versions 1
///     https://host:port 1.1
///     https://other:8443 2
///
/// No keys, paths or credentials: origins only (scheme, host, port), and only those of endpoints
/// whose host has no key in it (``HTTPEngine/versionsSeen``).
package struct HTTPVersionDocument: Equatable {
    /// The document's name in the state directory.
    package static let name = "http-versions"
    /// Origins kept at most: the last written first (see ``merging(_:)``).
    package static let limit = 10_000
    private static let header = "session-cleanup-http-versions 1"
    /// The largest document a daemon writes: the header and ``limit`` of the longest lines
    /// (`https://`, a host of 255 bytes, `:65535`, ` 1.1`, the newline). Read at most this and a byte.
    package static let maximumBytes = header.utf8.count + 1 + limit * (8 + 255 + 6 + 4 + 1)

    /// Origins with the version they answered in last (true: HTTP/2), in the file's order.
    package private(set) var entries: [(origin: HTTPOrigin, http2: Bool)] = []

    /// What a document could not be read for: the line and why.
    package struct Damage: Error, CustomStringConvertible {
        package let line: Int
        package let reason: String
        package var description: String { "line \(line): \(reason)" }
    }

    package init() {}

    /// Reads a document's bytes.
    ///
    /// - Throws: ``Damage`` naming the first line that is not what a daemon writes (the header,
    ///   `https://HOST:PORT 1.1|2`, each origin once, within ``maximumBytes``), never quoting it.
    package init(decoding bytes: [UInt8]) throws(Damage) {
        guard bytes.count <= Self.maximumBytes else {
            let line = bytes.prefix(Self.maximumBytes).lazy.filter { $0 == UInt8(ascii: "\n") }.count + 1
            throw Damage(line: line, reason: "beyond the first \(Self.maximumBytes) bytes")
        }
        var lineOf: [HTTPOrigin: Int] = [:]
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        guard let first = lines.first, String(decoding: first, as: UTF8.self) == Self.header else {
            throw Damage(line: 1, reason: "not \"\(Self.header)\"")
        }
        for (index, line) in lines.enumerated().dropFirst() {
            if line.isEmpty, index == lines.count - 1 { break }
            let number = index + 1
            let fields = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
            guard fields.count == 2, let origin = HTTPOrigin(url: String(decoding: fields[0], as: UTF8.self)),
                Self.readsBack(origin), origin.description.utf8.elementsEqual(fields[0])
            else { throw Damage(line: number, reason: "not \"https://HOST:PORT VERSION\"") }
            let http2: Bool
            switch String(decoding: fields[1], as: UTF8.self) {
            case "1.1": http2 = false
            case "2": http2 = true
            default: throw Damage(line: number, reason: "the version is neither 1.1 nor 2")
            }
            if let earlier = lineOf[origin] { throw Damage(line: number, reason: "the same origin as line \(earlier)") }
            lineOf[origin] = number
            guard entries.count < Self.limit else {
                throw Damage(line: number, reason: "more than \(Self.limit) origins")
            }
            entries.append((origin, http2))
        }
    }

    /// The document's bytes.
    package var encoded: [UInt8] {
        var text = Self.header + "\n"
        for entry in entries { text += "\(entry.origin) \(entry.http2 ? "2" : "1.1")\n" }
        return Array(text.utf8)
    }

    /// The origins that answered in HTTP/1.1 last.
    package var http1Origins: Set<HTTPOrigin> { Set(entries.lazy.filter { !$0.http2 }.map(\.origin)) }

    /// Whether `told` (an engine's ``HTTPEngine/versionsSeen``) says nothing this document does not.
    package func holds(_ told: [HTTPOrigin: Bool]) -> Bool {
        guard !told.isEmpty else { return true }
        let known = Dictionary(entries.lazy.map { ($0.origin, $0.http2) }, uniquingKeysWith: { first, _ in first })
        return told.allSatisfy { known[$0.key] == $0.value }
    }

    /// This document with `told` first (in origin order, for a stable file), then the origins it
    /// held that `told` does not name, up to ``limit``. An origin that would not read back (not
    /// HTTPS, a host `HTTPOrigin(url:)` reads otherwise, or one with a space or control byte that
    /// would split its line) is left out, so that one cannot damage the whole record.
    package func merging(_ told: [HTTPOrigin: Bool]) -> HTTPVersionDocument {
        var merged = HTTPVersionDocument()
        merged.entries = told.filter { Self.readsBack($0.key) }
            .sorted { $0.key.description < $1.key.description }.map { ($0.key, $0.value) }
        merged.entries += entries.lazy.filter { told[$0.origin] == nil }
        if merged.entries.count > Self.limit { merged.entries.removeLast(merged.entries.count - Self.limit) }
        return merged
    }

    /// Whether `origin`'s line would read back as `origin`: what is written, and all that reads.
    private static func readsBack(_ origin: HTTPOrigin) -> Bool {
        let text = origin.description
        return origin.isTLS && !text.utf8.contains { $0 <= UInt8(ascii: " ") || $0 == 0x7F }
            && HTTPOrigin(url: text) == origin
    }

    package static func == (lhs: HTTPVersionDocument, rhs: HTTPVersionDocument) -> Bool {
        lhs.entries.elementsEqual(rhs.entries) { $0.origin == $1.origin && $0.http2 == $1.http2 }
    }
}
