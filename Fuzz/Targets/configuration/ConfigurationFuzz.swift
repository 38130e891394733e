import Configuration
import FuzzSupport

/// The configuration parser and loader: a main file and drop-ins, any bytes.
///
/// Input: files separated by a line `%%%%` (the first is the main file). Invariants beyond "no
/// crash": no problem quotes the planted secret (wherever it was put: a header, a URL's user
/// information, a line that is not an assignment, an unknown key); a file with CRLF line ends
/// reads exactly as with LF; a configuration that loads has only headers and URLs that cannot
/// break a request line, no body on a GET, and a minimum request time shorter than the budget.
enum ConfigurationFuzz {
    static let separator = Array("\n%%%%\n".utf8)

    static func run(_ input: [UInt8]) {
        let files = Fuzz.split(input, separator: separator).enumerated().map { index, bytes in
            (path: index == 0 ? "main.conf" : "main.conf.d/\(index).conf", bytes: bytes)
        }
        let result = load(files)
        if case .failure(let error) = result {
            for problem in error.problems {
                Fuzz.require(!Fuzz.contains(problem.description, PlantedSecret.text), "problem quotes: \(problem)")
            }
            Fuzz.require(!error.summary.contains("\n"), "summary is not one line")
        }
        if case .success(let configuration) = result { checkLoaded(configuration) }
        if !input.contains(0x0D) {
            let crlf = files.map { (path: $0.path, bytes: withCRLF($0.bytes)) }
            Fuzz.require(load(crlf) == result, "CRLF changed the result")
        }
    }

    private static func load(_ files: [(path: String, bytes: [UInt8])]) -> Result<Configuration, ConfigurationError> {
        do {
            return .success(try ConfigurationLoader.load(files: files))
        } catch {
            return .failure(error)
        }
    }

    private static func withCRLF(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        for byte in bytes {
            if byte == 0x0A { out.append(0x0D) }
            out.append(byte)
        }
        return out
    }

    private static func checkLoaded(_ configuration: Configuration) {
        let stop = configuration.stop
        Fuzz.require(stop.minimumRequest < stop.budget, "minimum \(stop.minimumRequest) ≥ budget \(stop.budget)")
        var names = Set<String>()
        for endpoint in configuration.endpoints {
            Fuzz.require(names.insert(endpoint.name).inserted, "endpoint \(endpoint.name) twice")
            let controls = { (text: String) in text.utf8.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F } }
            Fuzz.require(!controls(endpoint.url), "control character in a URL")
            for header in endpoint.headers { Fuzz.require(!controls(header), "control character in a header") }
            Fuzz.require(endpoint.body == nil || endpoint.method != "GET", "a body with GET")
            let lower = endpoint.url.lowercased()
            Fuzz.require(lower.hasPrefix("http://") || lower.hasPrefix("https://"), "not http(s)")
            let authority = endpoint.url.utf8.drop { $0 != UInt8(ascii: "/") }.dropFirst(2)
                .prefix { $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }
            Fuzz.require(!authority.isEmpty && !authority.contains(UInt8(ascii: "@")), "no host, or user information")
            Fuzz.require(
                endpoint.url.contains("{session}") || (endpoint.body?.contains("{session}") ?? false)
                    || endpoint.headers.contains { $0.contains("{session}") }, "never sends the session")
        }
    }
}
