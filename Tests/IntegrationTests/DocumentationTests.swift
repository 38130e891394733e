import Foundation
import XCTest

@testable import Configuration

/// Every configuration key the loader accepts is documented where operators look for it — the
/// man page (under its section, with its default), README's table, the example configuration —
/// and no documented key is one the loader does not know. Every verb has its entry in the man page.
///
/// The keys are not listed by hand: every capitalised string literal in the library's sources is
/// a candidate, and the real loader says which ones it knows (its error for a candidate differs
/// from its error for a key that certainly does not exist).
final class DocumentationTests: XCTestCase {
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    private func read(_ path: String) throws -> String {
        try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
    }

    /// `"BudgetSec"`-like literals anywhere in Sources.
    private func candidates() throws -> Set<String> {
        let sources = Self.root.appendingPathComponent("Sources")
        guard let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil) else {
            throw POSIXError(.ENOENT)
        }
        let literal = try NSRegularExpression(pattern: #""([A-Z][A-Za-z0-9]+)""#)
        var names: Set<String> = []
        for case let file as URL in files where file.pathExtension == "swift" {
            let text = try String(contentsOf: file, encoding: .utf8)
            for match in literal.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                if let range = Range(match.range(at: 1), in: text) { names.insert(String(text[range])) }
            }
        }
        return names
    }

    /// The loader's problems with `text` (as the file `probe`), one per line; "" if it loads.
    private func loaderError(_ text: String) -> String {
        do {
            _ = try ConfigurationLoader.load(files: [(path: "probe", bytes: Array(text.utf8))])
            return ""
        } catch {
            return error.description
        }
    }

    /// Whether `text` draws, on `line`, the same complaint as `reference` (with `placeholder`
    /// standing for `name`) — the complaint about something the loader does not know. What the
    /// loader adds in parentheses ("did you mean …") changes nothing.
    private func sameComplaint(
        _ text: String, as reference: String, line: Int, placeholder: String, name: String
    ) -> Bool {
        let prefix = "probe:\(line):"
        guard
            let unknown = loaderError(reference).split(separator: "\n").first(where: { $0.hasPrefix(prefix) })?
                .replacing(placeholder, with: name)
        else { return false }
        // What follows in parentheses (a suggestion, a pointer to the documentation) varies.
        let complaint = unknown.components(separatedBy: " (").first ?? String(unknown)
        return loaderError(text).split(separator: "\n").contains { $0.hasPrefix(complaint) }
    }

    /// The sections and keys the loader knows.
    private func knownKeys() throws -> [String: Set<String>] {
        let names = try candidates()
        var known: [String: Set<String>] = [:]
        for section in names
        where !sameComplaint(
            "[\(section)]\n", as: "[ZzNoSuchSection]\n", line: 1, placeholder: "ZzNoSuchSection", name: section)
        {
            known[section] = Set(
                names.filter { key in
                    !sameComplaint(
                        "[\(section)]\n\(key)=\n", as: "[\(section)]\nZzNoSuchKey=\n", line: 2,
                        placeholder: "ZzNoSuchKey", name: key)
                })
        }
        return known
    }

    func testTheProbeFindsTheKeysItMust() throws {
        let known = try knownKeys()
        XCTAssertTrue(Set(known.keys).isSuperset(of: ["Stop", "Start", "Control", "Endpoint"]), "\(known.keys)")
        XCTAssertTrue(known["Stop"]?.contains("BudgetSec") ?? false, "\(known)")
        XCTAssertTrue(known["Endpoint"]?.contains("URL") ?? false, "\(known)")
        XCTAssertFalse(known["Stop"]?.contains("URL") ?? true, "URL= is not a [Stop] key")
    }

    func testEveryConfigurationKeyIsDocumentedInTheManPageWithItsDefault() throws {
        let page = try read("docs/man/session-cleanup.conf.5.scd")
        let entries = Self.manEntries(page)
        for (section, keys) in try knownKeys() {
            XCTAssertNotNil(entries[section], "session-cleanup.conf(5) has no '# [\(section)] SECTION' heading")
            for key in keys.sorted() {
                guard let entry = entries[section]?[key] else {
                    XCTFail("session-cleanup.conf(5): [\(section)] \(key)= is not documented (a line '*\(key)=*…')")
                    continue
                }
                XCTAssertTrue(entry.contains("Default"), "session-cleanup.conf(5): \(key)= does not give its default")
            }
            for documented in (entries[section] ?? [:]).keys.sorted() where !keys.contains(documented) {
                XCTFail("session-cleanup.conf(5) documents [\(section)] \(documented)=, which the loader does not know")
            }
        }
    }

    func testEveryConfigurationKeyIsInTheReadmeAndTheExampleConfiguration() throws {
        let readme = try read("README.md")
        let example = try read("systemd/session-cleanup.conf")
        let exampleSections = Self.exampleSections(example)
        let entries = Self.manEntries(try read("docs/man/session-cleanup.conf.5.scd"))
        for (section, keys) in try knownKeys() {
            // Keys the loader refuses (Token=) are documented in the man page only.
            for key in keys.sorted() where !(entries[section]?[key]?.contains("Refused") ?? false) {
                XCTAssertTrue(readme.contains("`\(key)=`"), "README.md's table lacks `\(key)=` ([\(section)])")
                XCTAssertTrue(
                    exampleSections[section]?.contains(key) ?? false,
                    "systemd/session-cleanup.conf lacks \(key)= (or #\(key)=) under [\(section)]")
            }
        }
    }

    func testEveryVerbHasItsEntryInTheManPage() throws {
        let page = try read("docs/man/session-cleanup.8.scd")
        let verbs = try BuiltBinary.run(["__complete", "1", "session-cleanup", ""]).out.split(separator: "\n")
        XCTAssertTrue(verbs.contains("list"), "the completion lists the verbs: \(verbs)")
        for verb in verbs {
            XCTAssertTrue(page.contains("\n## \(verb)\n"), "session-cleanup(8) has no '## \(verb)' entry")
        }
    }

    /// `[section: [key: entry text]]` from the page's `# [Section] SECTION` headings and the
    /// `*Key=*` lines that begin each entry (several on one line: `*Token=*, *Authorization=*`).
    static func manEntries(_ page: String) -> [String: [String: String]] {
        var entries: [String: [String: String]] = [:]
        var section: String?
        var current: [String] = []
        for line in page.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("# ") {
                section = nil
                current = []
                if line.hasPrefix("# ["), line.hasSuffix("] SECTION"), let close = line.firstIndex(of: "]") {
                    section = String(line[line.index(line.startIndex, offsetBy: 3)..<close])
                    entries[section ?? ""] = [:]
                }
                continue
            }
            guard let section else { continue }
            if line.hasPrefix("*"), let keys = Self.keysStarting(line) {
                current = keys
                for key in keys { entries[section, default: [:]][key] = "" }
                continue
            }
            for key in current { entries[section, default: [:]][key, default: ""] += line + "\n" }
        }
        return entries
    }

    /// The keys a line beginning with `*Key=*` names (`*Token=*, *Authorization=*` names two).
    private static func keysStarting(_ line: String) -> [String]? {
        guard line.range(of: #"^\*[A-Za-z0-9]+=\*"#, options: .regularExpression) != nil,
            let regex = try? NSRegularExpression(pattern: #"\*([A-Za-z0-9]+)=\*"#)
        else { return nil }
        let matches = regex.matches(in: line, range: NSRange(line.startIndex..., in: line))
        return matches.compactMap { Range($0.range(at: 1), in: line).map { String(line[$0]) } }
    }

    /// `[section: keys]` of the example configuration, commented-out lines included.
    static func exampleSections(_ text: String) -> [String: Set<String>] {
        var sections: [String: Set<String>] = [:]
        var section = ""
        for raw in text.split(separator: "\n") {
            let line = raw.hasPrefix("#") ? String(raw.dropFirst()) : String(raw)
            if line.hasPrefix("["), let close = line.firstIndex(of: "]") {
                section = String(line[line.index(after: line.startIndex)..<close])
            } else if let equals = line.firstIndex(of: "="), line.first?.isUppercase ?? false,
                line[..<equals].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) })
            {
                sections[section, default: []].insert(String(line[..<equals]))
            }
        }
        return sections
    }
}
