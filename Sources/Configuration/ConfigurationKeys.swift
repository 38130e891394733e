import Basics
import Vocabulary

/// Every key the configuration accepts, section by section, and how each value is read.
///
/// To add a key: give its setting a property with its default in `Configuration.swift`, add one
/// `ConfigKey` line to its section's table here (reading the value with the `ConfigAssignment`
/// readers in `ConfigKey.swift`, or a new reader there), add any check that involves other keys
/// to the section's `check`, and document it in README's table, `systemd/session-cleanup.conf`
/// and the man page. Unknown keys are errors, so a typo never silently becomes a default.
enum ConfigurationKeys {
    /// The sections there are.
    static let sectionNames = ["Stop", "Start", "Control", "Metrics", "Sleep", "Store", "Endpoint"]

    /// `[Stop]`.
    static let stop: [ConfigKey<StopSettings>] = [
        ConfigKey("BudgetSec") { settings, item in
            let budget = try item.duration(minimum: .milliseconds(100))
            guard budget <= StopSettings.maximumBudget else {
                throw item.problem(
                    "invalid BudgetSec=: at most 30min — at poweroff and reboot systemd waits no longer than that for "
                        + "the whole shutdown (poweroff.target's JobTimeoutSec=30min) and then forces it")
            }
            settings.budget = budget
        },
        ConfigKey("MinimumRequestSec") { $0.minimumRequest = try $1.duration(minimum: .zero) },
        ConfigKey("MaxConcurrentRequests") { $0.maxConcurrentRequests = try $1.integer(in: 1...4096) },
        ConfigKey("RetryDelaySec") { $0.retryDelay = try $1.duration(minimum: .milliseconds(1)) },
        ConfigKey("MaxAttempts") { $0.maxAttempts = try $1.integer(in: 1...100) },
        ConfigKey("OnRestart") { $0.onRestart = OnRestartPolicy(rawValue: try $1.choice(["keep", "end"])) ?? .keep },
    ]

    /// `[Start]`.
    static let start: [ConfigKey<StartSettings>] = [
        ConfigKey("LeftoverBudgetSec") { $0.leftoverBudget = try $1.duration(minimum: .milliseconds(100)) }
    ]

    /// `[Metrics]`.
    static let metrics: [ConfigKey<MetricsSettings>] = [
        ConfigKey("TextfileDirectory") { $0.textfileDirectory = try $1.absolutePathOrNone() }
    ]

    /// `[Sleep]`.
    static let sleep: [ConfigKey<SleepSettings>] = [
        ConfigKey("EndSessions") { $0.endSessions = try $1.boolean() }
    ]

    /// `[Store]`.
    static let store: [ConfigKey<StoreSettings>] = [
        // Issue 26: session keys sealed at rest with a key from a credential (never a file's text).
        ConfigKey("KeyCredential") { $0.keyCredential = try credentialName($1) }
    ]

    /// `[Control]`.
    static let control: [ConfigKey<ControlSettings>] = [
        ConfigKey("SocketMode") { settings, item in
            guard let mode = UInt32(item.value, radix: 8), mode <= 0o777 else {
                throw item.invalid("an octal mode such as 0660")
            }
            settings.socketMode = mode
            settings.socketModeIsSet = true
        },
        ConfigKey("SocketGroup") { settings, item in
            guard item.value.isEmpty || ConfigurationKeys.isAccountName(item.value) else {
                throw item.invalid("a group name or number")
            }
            settings.socketGroup = item.value
        },
        ConfigKey("MaxSessionsPerUser") { $0.maxSessionsPerUser = try $1.integer(in: 1...10_000_000) },
    ]

    /// `[Endpoint]`, one section per endpoint.
    static let endpoint: [ConfigKey<EndpointConfiguration>] = [
        ConfigKey("Name") { settings, item in
            guard !item.value.isEmpty, item.value.utf8.count <= 64,
                item.value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) })
            else { throw item.invalid("a name of letters, digits, '-', '_' and '.' (at most 64)") }
            settings.name = item.value
        },
        ConfigKey("URL") { $0.url = try endpointURL($1) },
        ConfigKey("Method") { $0.method = try $1.choice(["GET", "POST", "PUT", "DELETE"], ignoringCase: true) },
        ConfigKey("TimeoutSec") { $0.timeout = try $1.duration(minimum: .milliseconds(1)) },
        ConfigKey("Success") { settings, item in
            settings.success = SuccessRule(rawValue: try item.choice(["json-success", "2xx"])) ?? .jsonSuccess
        },
        ConfigKey("GoneStatus") { settings, item in
            var statuses: [Int] = []
            for word in item.value.split(separator: " ") {
                guard let status = Int(word), (100...599).contains(status) else {
                    throw item.invalid("HTTP statuses separated by spaces, e.g. 404 410")
                }
                statuses.append(status)
            }
            settings.goneStatuses = statuses  // systemd style: an empty assignment clears the list
        },
        ConfigKey("Header") { settings, item in
            if item.value.isEmpty {
                settings.headers = []  // systemd style: an empty assignment clears the list
            } else {
                settings.headers.append(try header(item))
            }
        },
        ConfigKey("Body") { $0.body = $1.value.isEmpty ? nil : try body($1) },
        ConfigKey("TokenCredential") { settings, item in
            guard !item.value.contains("/"), item.value != ".", item.value != ".." else {
                throw item.invalid("a credential name (LoadCredential=NAME:…), not a path")
            }
            settings.tokenCredential = item.value.isEmpty ? nil : item.value
        },
        ConfigKey("ClientCredential") { settings, item in
            guard !item.value.contains("/"), item.value != ".", item.value != ".." else {
                throw item.invalid("a credential name (LoadCredential=NAME:…), not a path")
            }
            settings.clientCredential = item.value.isEmpty ? nil : item.value
        },
        ConfigKey("ClientAuthentication") { settings, item in
            settings.clientAuthentication =
                ClientAuthentication(rawValue: try item.choice(["basic", "basic-raw", "post"])) ?? .basic
        },
        ConfigKey("TokenURL") { settings, item in
            guard !item.value.containsText("{session}") else {
                throw item.invalid("the provider's token endpoint, without {session}")
            }
            settings.tokenURL = item.value.isEmpty ? nil : try endpointURL(item)
        },
        ConfigKey("TokenScope") { $0.tokenScope = $1.value.isEmpty ? nil : $1.value },
        ConfigKey("TokenAudience") { $0.tokenAudience = $1.value.isEmpty ? nil : $1.value },
        ConfigKey("CAFile") { $0.caFile = try $1.absolutePathOrNone() },
        ConfigKey("HTTPVersion") { settings, item in
            settings.httpVersion = HTTPRequest.Version(rawValue: try item.choice(["auto", "1.1", "2"])) ?? .automatic
        },
        ConfigKey("MaxConnectionsPerHost") {
            $0.maxConnectionsPerHost = $1.value.isEmpty ? nil : try $1.integer(in: 1...4096)
        },
        ConfigKey("Concurrency") { settings, item in
            settings.concurrency = ConcurrencyMode(rawValue: try item.choice(["adaptive", "fixed"])) ?? .adaptive
        },
        ConfigKey("Proxy") { $0.proxy = try proxyURL($1) },
        ConfigKey("NoProxy") {
            $0.noProxy = $1.value.split(whereSeparator: { $0 == "," || $0 == " " }).joined(separator: ",")
        },
        ConfigKey("ProxyCredential") { settings, item in
            guard !item.value.contains("/"), item.value != ".", item.value != ".." else {
                throw item.invalid("a credential name (LoadCredential=NAME:…), not a path")
            }
            settings.proxyCredential = item.value.isEmpty ? nil : item.value
        },
        // Issue 24, recipes: a protocol's settings (EndpointPreset), applied after the section.
        ConfigKey("Preset") { settings, item in
            settings.preset =
                item.value.isEmpty
                ? nil : EndpointPreset(rawValue: try item.choice(EndpointPreset.allCases.map(\.rawValue)))
        },
        // Issue 24, mutual TLS: a client certificate and key from credentials (never files).
        ConfigKey("ClientCertificateCredential") { $0.clientCertificateCredential = try credentialName($1) },
        ConfigKey("ClientKeyCredential") { $0.clientKeyCredential = try credentialName($1) },
        ConfigKey("Token") { _, item in throw secretRefused(item) },
        ConfigKey("Authorization") { _, item in throw secretRefused(item) },
    ]

    // MARK: Checks of several keys

    /// `[Stop]` as a whole (after every file).
    static func check(_ stop: ConfigSectionSettings<StopSettings>) -> [ConfigurationProblem] {
        guard stop.settings.minimumRequest >= stop.settings.budget else { return [] }
        let location = stop.assigned["MinimumRequestSec"] ?? stop.assigned["BudgetSec"]
        return [
            ConfigurationProblem(
                file: location?.file ?? "", line: location?.line ?? 0,
                "MinimumRequestSec= must be shorter than BudgetSec=, or no request could ever start")
        ]
    }

    /// One `[Endpoint]` as a whole.
    static func check(_ endpoint: ConfigSectionSettings<EndpointConfiguration>) -> [ConfigurationProblem] {
        let settings = endpoint.settings
        let file = endpoint.section?.file ?? ""
        let line = endpoint.section?.line ?? 0
        // A key whose value was refused is reported already; what depends on it is not checked.
        guard !settings.name.isEmpty else {
            return endpoint.refused.contains("Name")
                ? [] : [ConfigurationProblem(file: file, line: line, "[Endpoint] has no Name=")]
        }
        guard !settings.url.isEmpty else {
            return endpoint.refused.contains("URL")
                ? [] : [ConfigurationProblem(file: file, line: line, "[Endpoint] '\(settings.name)' has no URL=")]
        }
        var problems: [ConfigurationProblem] = []
        if !(settings.url.containsText("{session}") || (settings.body?.containsText("{session}") ?? false)
            || settings.headers.contains(where: { $0.containsText("{session}") }))
        {
            problems.append(
                ConfigurationProblem(
                    file: file, line: line,
                    "[Endpoint] '\(settings.name)' never sends the session: put {session} in URL=, Body= or a Header="))
        }
        if settings.proxy == nil, settings.proxyCredential != nil || !settings.noProxy.isEmpty {
            let key = settings.proxyCredential != nil ? "ProxyCredential" : "NoProxy"
            let location = endpoint.assigned[key]
            problems.append(
                ConfigurationProblem(
                    file: location?.file ?? file, line: location?.line ?? line,
                    "[Endpoint] '\(settings.name)' has \(key)= but no Proxy="))
        }
        problems += clientAuthenticationProblems(endpoint, file: file, line: line)
        problems += clientCertificateProblems(endpoint, file: file, line: line)
        if settings.body != nil && settings.method == "GET" {
            let body = endpoint.assigned["Body"]
            problems.append(
                ConfigurationProblem(
                    file: body?.file ?? file, line: body?.line ?? line,
                    "[Endpoint] '\(settings.name)' has a Body= but Method=GET, which sends no body: "
                        + "set Method=POST, PUT or DELETE"))
        }
        return problems
    }

    /// `ClientCredential=` and `ClientAuthentication=` against the rest of the endpoint.
    private static func clientAuthenticationProblems(
        _ endpoint: ConfigSectionSettings<EndpointConfiguration>, file: String, line: Int
    ) -> [ConfigurationProblem] {
        let settings = endpoint.settings
        func problem(_ key: String, _ text: String) -> ConfigurationProblem {
            let location = endpoint.assigned[key]
            return ConfigurationProblem(
                file: location?.file ?? file, line: location?.line ?? line, "[Endpoint] '\(settings.name)' \(text)")
        }
        if settings.tokenURL == nil, !endpoint.refused.contains("TokenURL") {
            for key in ["TokenScope", "TokenAudience"] where endpoint.assigned[key] != nil {
                return [problem(key, "has \(key)= but no TokenURL=")]
            }
        }
        guard settings.clientCredential != nil else {
            if settings.tokenURL != nil, !endpoint.refused.contains("ClientCredential") {
                return [
                    problem(
                        "TokenURL",
                        "has TokenURL= but no ClientCredential=: the client-credentials grant needs the client's "
                            + "id and secret")
                ]
            }
            return endpoint.assigned["ClientAuthentication"] != nil && !endpoint.refused.contains("ClientCredential")
                ? [problem("ClientAuthentication", "has ClientAuthentication= but no ClientCredential=")] : []
        }
        if settings.tokenCredential != nil {
            return [
                problem(
                    "ClientCredential",
                    "has both ClientCredential= and TokenCredential=: a call authenticates one way, choose one")
            ]
        }
        // With TokenURL= the client authenticates the grant (a form POST of its own), not the calls.
        guard settings.clientAuthentication == .post, settings.tokenURL == nil else { return [] }
        if settings.method == "GET" {
            return [
                problem(
                    "ClientAuthentication",
                    "has ClientAuthentication=post but Method=GET, which sends no body: set Method=POST")
            ]
        }
        if let body = settings.body, body.hasPrefix("{") || body.hasPrefix("[") {
            return [
                problem(
                    "ClientAuthentication",
                    "has ClientAuthentication=post but a JSON Body=: the client_id and client_secret fields "
                        + "need a form-encoded body (name=value&…), or use ClientAuthentication=basic")
            ]
        }
        if let type = settings.headers.first(where: { $0.lowercased().hasPrefix("content-type:") }),
            !type.lowercased().containsText("application/x-www-form-urlencoded")
        {
            return [
                problem(
                    "ClientAuthentication",
                    "has ClientAuthentication=post but a Content-Type other than "
                        + "application/x-www-form-urlencoded: the client fields need a form-encoded body")
            ]
        }
        return []
    }

    /// `ClientCertificateCredential=` and `ClientKeyCredential=`: both or neither, over https.
    private static func clientCertificateProblems(
        _ endpoint: ConfigSectionSettings<EndpointConfiguration>, file: String, line: Int
    ) -> [ConfigurationProblem] {
        let settings = endpoint.settings
        let keys = ["ClientCertificateCredential", "ClientKeyCredential"]
        let set = [settings.clientCertificateCredential != nil, settings.clientKeyCredential != nil]
        guard set.contains(true), !keys.contains(where: endpoint.refused.contains) else { return [] }
        let key = set[0] ? keys[0] : keys[1]
        let location = endpoint.assigned[key]
        func problem(_ text: String) -> [ConfigurationProblem] {
            [
                ConfigurationProblem(
                    file: location?.file ?? file, line: location?.line ?? line, "[Endpoint] '\(settings.name)' \(text)")
            ]
        }
        if set != [true, true] {
            return problem("has \(key)= but no \(set[0] ? keys[1] : keys[0])=: a client certificate needs its key")
        }
        guard settings.url.lowercased().hasPrefix("https://") else {
            return problem("has a client certificate but an http:// URL: it is presented over TLS only")
        }
        return []
    }

    // MARK: Endpoint values

    /// `URL=` (and `TokenURL=`): http or https, no spaces, a host, and no user information: a
    /// password in a URL would be printed and journaled wherever the URL is (a token belongs in
    /// `TokenCredential=`).
    private static func endpointURL(_ item: ConfigAssignment) throws(ConfigurationProblem) -> String {
        let url = item.value
        let lower = url.lowercased()
        guard let scheme = ["http://", "https://"].first(where: { lower.hasPrefix($0) }), !url.contains(" "),
            !url.contains("\t")
        else { throw item.invalid("an http:// or https:// URL without spaces") }
        let afterScheme = url.utf8.dropFirst(scheme.utf8.count)
        let authority = afterScheme.prefix {
            $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#")
        }
        guard !authority.isEmpty else { throw item.invalid("an http:// or https:// URL with a host") }
        guard !authority.contains(UInt8(ascii: "@")) else {
            throw item.problem(
                "invalid \(item.key)=: a user name or password in the URL (user:password@host) would be shown "
                    + "wherever the URL is; put a token in TokenCredential= instead")
        }
        return url
    }

    /// `Proxy=`: `http://`, `https://` or `socks5h://` and a host, an optional port, nothing
    /// else; a user name or password is refused (it goes in `ProxyCredential=`).
    private static func proxyURL(_ item: ConfigAssignment) throws(ConfigurationProblem) -> String? {
        guard !item.value.isEmpty else { return nil }
        guard !item.value.contains("@") else {
            throw item.problem(
                "invalid Proxy=: a user name or password in it would be shown wherever the proxy is; "
                    + "put user:password in a credential named by ProxyCredential= instead")
        }
        let expected = "http://, https:// or socks5h:// and a host, e.g. http://proxy.example:3128"
        let lower = item.value.lowercased()
        guard let scheme = ["http://", "https://", "socks5h://"].first(where: { lower.hasPrefix($0) }) else {
            throw item.invalid(expected)
        }
        var authority = item.value.dropFirst(scheme.count)
        if authority.hasSuffix("/") { authority = authority.dropLast() }
        guard !authority.isEmpty, !authority.contains(where: { "/?# \t".contains($0) }),
            HTTPOrigin(url: "http://" + authority) != nil
        else { throw item.invalid(expected) }
        return scheme + authority
    }

    /// `Header=`: `Name: value`, the name an HTTP token. (The parser already refused control
    /// characters, so no value can end the header line early.)
    private static func header(_ item: ConfigAssignment) throws(ConfigurationProblem) -> String {
        let bytes = Array(item.value.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0,
            bytes[..<colon].allSatisfy(isHeaderNameByte)
        else { throw item.invalid("'Name: value', the name letters, digits and !#$%&'*+-.^_`|~") }
        let name = String(decoding: bytes[..<colon], as: UTF8.self)
        let value = item.value.utf8.dropFirst(colon + 1)
        if credentialHeaders.contains(name.lowercased()),
            !String(decoding: value, as: UTF8.self).containsText("{session}")
        {
            throw item.problem(
                "secrets do not belong in the configuration file: a Header=\(name): with its value "
                    + "written here is refused; use TokenCredential= or ClientCredential= with LoadCredential=")
        }
        return item.value
    }

    /// Headers whose value is a credential: written in the file (not `{session}`), they are refused.
    private static let credentialHeaders: Set<String> = ["authorization", "cookie", "proxy-authorization"]

    /// Form fields whose value is a credential: written in a form `Body=`, they are refused.
    private static let credentialFields: Set<String> = ["client_secret", "password"]

    /// `Body=`: any template, but a form body's `client_secret=` or `password=` field with its
    /// value written here is refused (it would be world-readable).
    private static func body(_ item: ConfigAssignment) throws(ConfigurationProblem) -> String {
        let text = item.value
        guard !(text.hasPrefix("{") || text.hasPrefix("[")) else { return text }
        for field in text.split(separator: "&") {
            let parts = field.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, credentialFields.contains(parts[0].lowercased()), !parts[1].isEmpty,
                !parts[1].containsText("{session}")
            else { continue }
            throw item.problem(
                "secrets do not belong in the configuration file: a Body= field \(parts[0].lowercased())= with its "
                    + "value written here is refused; use ClientCredential= (ClientAuthentication=post) with "
                    + "LoadCredential=")
        }
        return text
    }

    private static func isHeaderNameByte(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A)
            || Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
    }

    // MARK: Helpers

    /// A credential's name (`LoadCredential=NAME:…`), or nil for an empty value.
    private static func credentialName(_ item: ConfigAssignment) throws(ConfigurationProblem) -> String? {
        guard !item.value.contains("/"), item.value != ".", item.value != ".." else {
            throw item.invalid("a credential name (LoadCredential=NAME:…), not a path")
        }
        return item.value.isEmpty ? nil : item.value
    }

    private static func secretRefused(_ item: ConfigAssignment) -> ConfigurationProblem {
        item.problem("secrets do not belong in the configuration file: use TokenCredential= with LoadCredential=")
    }

    /// A user or group name as `useradd` takes it, or a number.
    static func isAccountName(_ text: String) -> Bool {
        guard let first = text.utf8.first, text.utf8.count <= 32 else { return false }
        if text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) { return true }
        let isStart = (first >= 0x61 && first <= 0x7A) || first == 0x5F
        return isStart
            && text.utf8.allSatisfy {
                ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F || $0 == 0x2D
                    || ($0 >= 0x41 && $0 <= 0x5A)
            }
    }

    /// The known name closest to `word` (case ignored, at most two edits away), to suggest for a typo.
    /// Only ever a known name: the word itself is not repeated (it may be a secret).
    static func suggestion(for word: String, among names: [String]) -> String? {
        let typed = Array(word.lowercased().utf8)
        guard typed.count <= 64 else { return nil }
        var best: (name: String, distance: Int)?
        for name in names {
            let known = Array(name.lowercased().utf8)
            // A truncated key (`Budget` for `BudgetSec`) is as good as a typo.
            let truncated = typed.count >= 4 && known.starts(with: typed)
            let distance = truncated ? 1 : editDistance(typed, known)
            if distance <= 2, distance < (best?.distance ?? Int.max) { best = (name, distance) }
        }
        return best?.name
    }

    private static func editDistance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1] + [Int](repeating: 0, count: b.count)
            for (j, y) in b.enumerated() {
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
