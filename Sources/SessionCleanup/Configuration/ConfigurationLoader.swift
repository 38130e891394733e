/// Reads `session-cleanup.conf` and its drop-ins (`session-cleanup.conf.d/*.conf`, in name
/// order, later files winning) into a ``Configuration``.
public enum ConfigurationLoader {
    /// Loads the main file at `path` and its drop-ins. A missing main file is an error only when
    /// `required` (an explicit `--config`); otherwise defaults apply.
    /// Returns the configuration and the files read, in order.
    public static func load(path: String, required: Bool) throws(ConfigurationError) -> (Configuration, [String]) {
        var files: [String] = []
        if FileReading.exists(path) {
            files.append(path)
        } else if required {
            throw ConfigurationError(file: path, line: 0, "no such file")
        }
        let dropInDirectory = path + ".d"
        do {
            let names = try FileReading.directoryEntries(dropInDirectory) ?? []
            files += names.filter { $0.hasSuffix(".conf") }.sorted().map { "\(dropInDirectory)/\($0)" }
        } catch {
            throw ConfigurationError(file: dropInDirectory, line: 0, "cannot list drop-ins: \(error)")
        }
        var sections: [ConfigSection] = []
        for file in files {
            let text: String
            do {
                let bytes = try FileReading.contents(of: file)
                guard let decoded = String(validating: bytes, as: UTF8.self) else {
                    throw ConfigurationError(file: file, line: 0, "not valid UTF-8")
                }
                text = decoded
            } catch let error as SystemCallError {
                throw ConfigurationError(file: file, line: 0, "cannot read: \(error)")
            } catch let error as ConfigurationError {
                throw error
            } catch {
                throw ConfigurationError(file: file, line: 0, "cannot read: \(error)")
            }
            sections += try ConfigFile.parse(text, file: file)
        }
        return (try build(from: sections), files)
    }

    /// Gives meaning to parsed sections (exposed for tests).
    public static func build(from sections: [ConfigSection]) throws(ConfigurationError) -> Configuration {
        var configuration = Configuration()
        for section in sections {
            switch section.name {
            case "Stop": try apply(section, to: &configuration.stop)
            case "Start": try apply(section, to: &configuration.start)
            case "Control": try apply(section, to: &configuration.control)
            case "Endpoint":
                let endpoint = try endpoint(from: section)
                if let index = configuration.endpoints.firstIndex(where: { $0.name == endpoint.name }) {
                    configuration.endpoints[index] = endpoint  // a later file redefines it
                } else {
                    configuration.endpoints.append(endpoint)
                }
            default:
                throw ConfigurationError(
                    file: section.file, line: section.line,
                    "unknown section [\(section.name)] (expected [Stop], [Start], [Control] or [Endpoint])")
            }
        }
        return configuration
    }

    private static func apply(_ section: ConfigSection, to stop: inout StopSettings) throws(ConfigurationError) {
        for item in section.assignments {
            switch item.key {
            case "BudgetSec": stop.budget = try duration(item, minimum: .milliseconds(100))
            case "MinimumRequestSec": stop.minimumRequest = try duration(item, minimum: .zero)
            case "MaxConcurrentRequests": stop.maxConcurrentRequests = try integer(item, in: 1...4096)
            case "RetryDelaySec": stop.retryDelay = try duration(item, minimum: .milliseconds(1))
            case "MaxAttempts": stop.maxAttempts = try integer(item, in: 1...100)
            case "OnRestart":
                guard let policy = OnRestartPolicy(rawValue: item.value) else { throw invalid(item, "keep or end") }
                stop.onRestart = policy
            default: throw unknownKey(item, in: section)
            }
        }
        if stop.minimumRequest >= stop.budget {
            throw ConfigurationError(
                file: section.file, line: section.line,
                "MinimumRequestSec= must be shorter than BudgetSec=, or no request could ever start")
        }
    }

    private static func apply(_ section: ConfigSection, to start: inout StartSettings) throws(ConfigurationError) {
        for item in section.assignments {
            switch item.key {
            case "LeftoverBudgetSec": start.leftoverBudget = try duration(item, minimum: .milliseconds(100))
            default: throw unknownKey(item, in: section)
            }
        }
    }

    private static func apply(_ section: ConfigSection, to control: inout ControlSettings) throws(ConfigurationError) {
        for item in section.assignments {
            switch item.key {
            case "SocketMode":
                guard let mode = UInt32(item.value, radix: 8), mode <= 0o777 else {
                    throw invalid(item, "an octal mode such as 0660")
                }
                control.socketMode = mode
            case "SocketGroup": control.socketGroup = item.value
            case "MaxSessionsPerUser": control.maxSessionsPerUser = try integer(item, in: 1...10_000_000)
            default: throw unknownKey(item, in: section)
            }
        }
    }

    private static func endpoint(from section: ConfigSection) throws(ConfigurationError) -> EndpointConfiguration {
        var name: String?
        var url: String?
        var endpoint = EndpointConfiguration(name: "", url: "")
        for item in section.assignments {
            switch item.key {
            case "Name":
                guard !item.value.isEmpty, item.value.count <= 64,
                    item.value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) })
                else { throw invalid(item, "a name of letters, digits, '-', '_' and '.' (at most 64)") }
                name = item.value
            case "URL":
                let lower = item.value.lowercased()
                guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), item.value.count > 8,
                    !item.value.contains(" ")
                else { throw invalid(item, "an http:// or https:// URL without spaces") }
                url = item.value
            case "Method":
                let method = item.value.uppercased()
                guard ["GET", "POST", "PUT", "DELETE"].contains(method) else {
                    throw invalid(item, "GET, POST, PUT or DELETE")
                }
                endpoint.method = method
            case "TimeoutSec": endpoint.timeout = try duration(item, minimum: .milliseconds(1))
            case "Success":
                guard let rule = SuccessRule(rawValue: item.value) else { throw invalid(item, "json-success or 2xx") }
                endpoint.success = rule
            case "GoneStatus":
                var statuses: [Int] = []
                for word in item.value.split(separator: " ") {
                    guard let status = Int(word), (100...599).contains(status) else {
                        throw invalid(item, "HTTP statuses separated by spaces, e.g. 404 410")
                    }
                    statuses.append(status)
                }
                endpoint.goneStatuses = statuses  // systemd style: an empty assignment clears the list
            case "Header":
                if item.value.isEmpty {
                    endpoint.headers = []
                } else {
                    guard let colon = item.value.firstIndex(of: ":"), colon != item.value.startIndex,
                        !item.value.contains("\r")
                    else { throw invalid(item, "'Name: value'") }
                    endpoint.headers.append(item.value)
                }
            case "Body": endpoint.body = item.value.isEmpty ? nil : item.value
            case "TokenCredential":
                guard !item.value.contains("/"), item.value != ".", item.value != ".." else {
                    throw invalid(item, "a credential name (LoadCredential=NAME:…), not a path")
                }
                endpoint.tokenCredential = item.value.isEmpty ? nil : item.value
            case "CAFile":
                guard item.value.isEmpty || item.value.hasPrefix("/") else { throw invalid(item, "an absolute path") }
                endpoint.caFile = item.value.isEmpty ? nil : item.value
            case "Token", "Authorization":
                throw ConfigurationError(
                    file: item.file, line: item.line,
                    "secrets do not belong in the configuration file: use TokenCredential= with LoadCredential=")
            default: throw unknownKey(item, in: section)
            }
        }
        guard let name else {
            throw ConfigurationError(file: section.file, line: section.line, "[Endpoint] has no Name=")
        }
        guard let url else {
            throw ConfigurationError(file: section.file, line: section.line, "[Endpoint] '\(name)' has no URL=")
        }
        guard
            url.contains("{session}") || (endpoint.body?.contains("{session}") ?? false)
                || endpoint.headers.contains(where: { $0.contains("{session}") })
        else {
            throw ConfigurationError(
                file: section.file, line: section.line,
                "[Endpoint] '\(name)' never sends the session: put {session} in URL=, Body= or a Header=")
        }
        endpoint.name = name
        endpoint.url = url
        return endpoint
    }

    private static func duration(_ item: ConfigAssignment, minimum: Duration) throws(ConfigurationError) -> Duration {
        guard let value = DurationParser.parse(item.value), value >= minimum else {
            throw invalid(item, "a duration such as 20s, 500ms or 1min 30s (at least \(minimum.humanReadable))")
        }
        return value
    }

    private static func integer(_ item: ConfigAssignment, in range: ClosedRange<Int>) throws(ConfigurationError) -> Int
    {
        guard let value = Int(item.value), range.contains(value) else {
            throw invalid(item, "an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    private static func invalid(_ item: ConfigAssignment, _ expected: String) -> ConfigurationError {
        // A header or body may carry a credential: its text is never echoed.
        let shown = ["Header", "Body"].contains(item.key) ? "" : "='\(item.value)'"
        return ConfigurationError(
            file: item.file, line: item.line, "invalid \(item.key)\(shown): expected \(expected)")
    }

    private static func unknownKey(_ item: ConfigAssignment, in section: ConfigSection) -> ConfigurationError {
        ConfigurationError(file: item.file, line: item.line, "unknown key '\(item.key)' in [\(section.name)]")
    }
}
