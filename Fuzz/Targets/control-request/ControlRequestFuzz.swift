import Foundation
import FuzzSupport
import SessionCleanup

/// Control-request decoding: any line a local client may send.
///
/// Invariants beyond "no crash": a line that decodes re-encodes to a line that decodes to the
/// same request, and is a JSON object to an independent parser too; a request's description
/// never shows its key; an error never quotes the key (when the planted secret is in `key`
/// and nowhere else) nor any text of a line that is not JSON. Responses are decoded too (the
/// CLI reads them), for crashes only.
enum ControlRequestFuzz {
    static func run(_ input: [UInt8]) {
        _ = try? ControlResponse.decode(line: input)
        let oracle = try? JSONSerialization.jsonObject(with: Data(input), options: [.fragmentsAllowed])
        let secretWhere = secretLocation(oracle)
        do {
            let request = try ControlRequest.decode(line: input)
            Fuzz.require(oracle is [String: Any], "decoded a request the oracle does not read as a JSON object")
            if secretWhere == .onlyInKey {
                Fuzz.require(!PlantedSecret.leaks(into: request.description), "description shows the key")
            }
            let line = try request.encodedLine()
            Fuzz.require(
                line.last == UInt8(ascii: "\n") && !line.dropLast().contains(UInt8(ascii: "\n")), "not one line")
            let again = try ControlRequest.decode(line: line.dropLast())
            Fuzz.require(again == request, "round trip changed the request: \(request) → \(again)")
        } catch let error as ControlProtocolError {
            Fuzz.require(error.code == .badRequest, "unexpected code \(error.code)")
            if secretWhere == .onlyInKey || secretWhere == .notJSON {
                Fuzz.require(!PlantedSecret.leaks(into: error.message), "error quotes the secret: \(error.message)")
            }
        } catch {
            Fuzz.require(false, "encoding a decoded request failed: \(error)")
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
