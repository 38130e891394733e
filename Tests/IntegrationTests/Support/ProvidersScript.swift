import Foundation
import XCTest

/// `Tests/Providers/providers.py`, the real identity providers on loopback that scripts/test.sh
/// sets up once per run: the commands the provider tests run against them.
enum ProvidersScript {
    /// `providers.py check`: how many of `tokenFile`'s tokens the provider holds `total`,
    /// `active` and `inactive`.
    static func check(_ directory: String, _ provider: String, _ tokenFile: String) throws -> [String: Int] {
        let out = try run(["check", "--dir", directory, provider, tokenFile])
        let counts = try XCTUnwrap(
            try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any], "providers.py check: \(out)")
        return counts.compactMapValues { $0 as? Int }
    }

    /// Runs the script with `arguments` under Debian's python3; its standard output.
    @discardableResult
    static func run(_ arguments: [String]) throws -> String {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Providers/providers.py").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [script] + arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestSetupError(
                "providers.py \(arguments.first ?? "") exited \(process.terminationStatus): "
                    + String(decoding: errData, as: UTF8.self))
        }
        return String(decoding: outData, as: UTF8.self)
    }
}
