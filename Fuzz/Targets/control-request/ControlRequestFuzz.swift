import Control
import Foundation
import FuzzSupport
import JSON

/// Control-request decoding: any line a local client may send, and the JSON reader and writer
/// under it.
///
/// Invariants beyond "no crash": a line that decodes re-encodes to a line that decodes to the
/// same request, and is a JSON object to an independent parser too; a request's description
/// never shows its key; an error never quotes the key (when the planted secret is in `key`
/// and nowhere else) nor any text of a line that is not JSON. Responses are decoded too (the
/// CLI reads them), for crashes only. The reader: `parse` refuses what `read` does, with the
/// same error, and a number beyond a Double's range besides (which Foundation's parser refuses
/// too); what it gives has `read`'s kind, is read by Foundation's parser too, is written by
/// `JSONWriter` as one line that reads back equal (an integral number may come back an
/// integer), and what that gives is written the same ever after.
enum ControlRequestFuzz {
    static func run(_ input: [UInt8]) {
        _ = try? ControlResponse.decode(line: input)
        let oracle = try? JSONSerialization.jsonObject(with: Data(input), options: [.fragmentsAllowed])
        checkReader(input, oracleReads: oracle != nil)
        let secretWhere = secretLocation(oracle)
        do {
            let request = try ControlRequest.decode(line: input)
            Fuzz.require(oracle is [String: Any], "decoded a request the oracle does not read as a JSON object")
            if secretWhere == .onlyInKey {
                Fuzz.require(!PlantedSecret.leaks(into: request.description), "description shows the key")
            }
            let line = request.encodedLine()
            Fuzz.require(
                line.last == UInt8(ascii: "\n") && !line.dropLast().contains(UInt8(ascii: "\n")), "not one line")
            let again = try ControlRequest.decode(line: line.dropLast())
            Fuzz.require(again == request, "round trip changed the request: \(request) → \(again)")
        } catch {
            Fuzz.require(error.code == .badRequest, "unexpected code \(error.code)")
            if secretWhere == .onlyInKey || secretWhere == .notJSON {
                Fuzz.require(!PlantedSecret.leaks(into: error.message), "error quotes the secret: \(error.message)")
            }
        }
    }

    /// The tree reader against the checking one, and the writer against the tree reader.
    private static func checkReader(_ input: [UInt8], oracleReads: Bool) {
        let checked = Result { () throws(StrictJSON.SyntaxError) in try StrictJSON.read(input) }
        let parsed = Result { () throws(StrictJSON.SyntaxError) in try StrictJSON.parse(input) }
        switch (checked, parsed) {
        case (.failure(let expected), .failure(let error)):
            Fuzz.require(error == expected, "parse refused with \(error), read with \(expected)")
        case (.success, .failure(let error)):
            // `read` has no values to give, so it takes a number beyond a Double's range; `parse` not.
            Fuzz.require(error.problem == StrictJSON.numberOutOfRange, "parse refused with \(error), read did not")
            Fuzz.require(!oracleReads, "parse refused a number Foundation's parser reads")
        case (.success(let document), .success(let value)):
            Fuzz.require(oracleReads, "the reader accepted what Foundation's parser refuses")
            Fuzz.require(kind(of: value) == kindClass(document.kind), "parse and read disagree on the kind")
            guard let written = try? JSONWriter.text(of: value) else {
                return Fuzz.require(false, "the writer refused what the reader gave")
            }
            Fuzz.require(!written.contains(UInt8(ascii: "\n")), "the writer wrote more than one line")
            do {
                let again = try StrictJSON.parse(written)
                Fuzz.require(same(again, value), "writing and reading again changed the value")
                // An integral number (`-0.0`, `1.0`) comes back an integer; from then on nothing changes.
                let second = try JSONWriter.text(of: again)
                let third = try JSONWriter.text(of: try StrictJSON.parse(second))
                Fuzz.require(third == second, "writing again changed the text")
            } catch {
                Fuzz.require(false, "the reader refuses what the writer wrote, or the writer what it read: \(error)")
            }
        default:
            Fuzz.require(false, "parse and read disagree on whether the text is JSON")
        }
    }

    /// Equal, where an integral number may come back as an integer: the writer writes `0e4` as
    /// `0`, as JSONEncoder did.
    private static func same(_ left: JSONValue, _ right: JSONValue) -> Bool {
        switch (left, right) {
        case (.integer(let whole), .number(let number)), (.number(let number), .integer(let whole)):
            return Double(whole) == number
        case (.array(let lefts), .array(let rights)):
            return lefts.count == rights.count && zip(lefts, rights).allSatisfy { same($0, $1) }
        case (.object(let lefts), .object(let rights)):
            return lefts.count == rights.count
                && lefts.allSatisfy { name, item in rights[name].map { same(item, $0) } ?? false }
        default:
            return left == right
        }
    }

    private static func kind(of value: JSONValue) -> String {
        switch value {
        case .null: return "null"
        case .bool: return "bool"
        case .integer, .number: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    private static func kindClass(_ kind: StrictJSON.Kind) -> String {
        switch kind {
        case .null: return "null"
        case .true, .false: return "bool"
        case .integer, .fraction: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    private enum SecretLocation { case absent, onlyInKey, elsewhere, notJSON }

    /// Where the planted secret is, as an independent JSON parser sees the line.
    private static func secretLocation(_ oracle: Any?) -> SecretLocation {
        guard let oracle else { return .notJSON }
        guard let object = oracle as? [String: Any] else { return .elsewhere }
        var inKey = false
        var elsewhere = false
        for (name, value) in object {
            if name.contains(PlantedSecret.core) { elsewhere = true }
            if name == "key", let key = value as? String, key.contains(PlantedSecret.core) {
                inKey = true
            } else if mentionsSecret(value) {
                elsewhere = true
            }
        }
        if elsewhere { return .elsewhere }
        return inKey ? .onlyInKey : .absent
    }

    private static func mentionsSecret(_ value: Any) -> Bool {
        switch value {
        case let text as String: return text.contains(PlantedSecret.core)
        case let array as [Any]: return array.contains(where: mentionsSecret)
        case let object as [String: Any]:
            return object.contains { $0.key.contains(PlantedSecret.core) || mentionsSecret($0.value) }
        default: return false
        }
    }
}
