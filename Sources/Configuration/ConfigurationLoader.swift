import Basics

/// Reads `session-cleanup.conf` and its drop-ins (`session-cleanup.conf.d/*.conf`, in name
/// order, later files winning) into a ``Configuration``.
///
/// Every problem in every file is collected — syntax, unknown sections and keys, bad values, a
/// file that cannot be read — and reported together in one ``ConfigurationError``, in the
/// order of the files and lines. The keys and how their values are read are in
/// ``ConfigurationKeys``.
package enum ConfigurationLoader {
    /// A configuration as read: the files it came from, and where each setting was last assigned.
    package struct Loaded: Sendable {
        /// The configuration.
        package let configuration: Configuration
        /// The files read, in order.
        package let files: [String]
        /// The last assignment of each setting, by `Section.Key` (`Stop.BudgetSec`) and, for an
        /// endpoint, `Endpoint.NAME.Key` (`Endpoint.auth.CAFile`): for problems found later.
        package let origins: [String: ConfigAssignment]
    }

    /// Loads the main file at `path` and its drop-ins. A missing main file is an error only when
    /// `required` (an explicit `--config`); otherwise defaults apply.
    /// Returns the configuration and the files read, in order.
    package static func load(path: String, required: Bool) throws(ConfigurationError) -> (Configuration, [String]) {
        let loaded = try read(path: path, required: required)
        return (loaded.configuration, loaded.files)
    }

    /// ``load(path:required:)``, with where each setting was assigned.
    package static func read(path: String, required: Bool) throws(ConfigurationError) -> Loaded {
        var problems: [ConfigurationProblem] = []
        var paths: [String] = []
        if FileReading.exists(path) {
            paths.append(path)
        } else if required {
            problems.append(ConfigurationProblem(file: path, line: 0, "no such file"))
        }
        let dropInDirectory = path + ".d"
        do {
            let names = try FileReading.directoryEntries(dropInDirectory) ?? []
            paths += names.filter { $0.hasSuffix(".conf") }.sorted().map { "\(dropInDirectory)/\($0)" }
        } catch {
            problems.append(ConfigurationProblem(file: dropInDirectory, line: 0, "cannot list drop-ins: \(error)"))
        }
        var files: [(path: String, bytes: [UInt8])] = []
        for file in paths {
            do {
                files.append((file, try FileReading.contents(of: file)))
            } catch {
                problems.append(ConfigurationProblem(file: file, line: 0, "cannot read: \(error)"))
            }
        }
        var loaded: (Configuration, [String: ConfigAssignment])?
        do {
            loaded = try build(files)
        } catch {
            problems += error.problems
        }
        guard let loaded, problems.isEmpty else { throw ConfigurationError(problems) }
        return Loaded(configuration: loaded.0, files: paths, origins: loaded.1)
    }

    /// Gives meaning to `files` (path and contents, main file first), as ``load(path:required:)``
    /// does once it has read them.
    package static func load(files: [(path: String, bytes: [UInt8])]) throws(ConfigurationError) -> Configuration {
        try build(files).0
    }

    private static func build(_ files: [(path: String, bytes: [UInt8])]) throws(ConfigurationError)
        -> (Configuration, [String: ConfigAssignment])
    {
        var problems: [ConfigurationProblem] = []
        var sections: [ConfigSection] = []
        for file in files {
            sections += ConfigFile.parse(file.bytes, file: file.path, problems: &problems)
        }
        var builder = Builder()
        for section in sections { builder.add(section, problems: &problems) }
        let configuration = builder.finish(problems: &problems)
        guard problems.isEmpty else {
            // In file and line order, whichever step found them; found order among equals.
            let order = Dictionary(files.enumerated().map { ($1.path, $0) }, uniquingKeysWith: { first, _ in first })
            let sorted = problems.enumerated().sorted {
                (order[$0.element.file] ?? files.count, $0.element.line, $0.offset)
                    < (order[$1.element.file] ?? files.count, $1.element.line, $1.offset)
            }
            throw ConfigurationError(sorted.map(\.element))
        }
        return (configuration, builder.origins)
    }

    /// Accumulates sections in order; each key's last assignment wins, an `[Endpoint]` with a
    /// `Name=` seen before replaces the earlier one.
    private struct Builder {
        var configuration = Configuration()
        var stop = ConfigSectionSettings(StopSettings())
        var start = ConfigSectionSettings(StartSettings())
        var control = ConfigSectionSettings(ControlSettings())
        var metrics = ConfigSectionSettings(MetricsSettings())
        var sleep = ConfigSectionSettings(SleepSettings())
        var store = ConfigSectionSettings(StoreSettings())
        var endpoints: [ConfigSectionSettings<EndpointConfiguration>] = []

        mutating func add(_ section: ConfigSection, problems: inout [ConfigurationProblem]) {
            switch section.name {
            case "Stop": stop.apply(section, ConfigurationKeys.stop, problems: &problems)
            case "Start": start.apply(section, ConfigurationKeys.start, problems: &problems)
            case "Control": control.apply(section, ConfigurationKeys.control, problems: &problems)
            case "Metrics": metrics.apply(section, ConfigurationKeys.metrics, problems: &problems)
            case "Sleep": sleep.apply(section, ConfigurationKeys.sleep, problems: &problems)
            case "Store": store.apply(section, ConfigurationKeys.store, problems: &problems)
            case "Endpoint":
                var endpoint = ConfigSectionSettings(EndpointConfiguration(name: "", url: ""), section: section)
                endpoint.apply(section, ConfigurationKeys.endpoint, problems: &problems)
                endpoint.settings.preset?.apply(to: &endpoint)
                if let index = endpoints.firstIndex(where: {
                    !$0.settings.name.isEmpty && $0.settings.name == endpoint.settings.name
                }) {
                    endpoints[index] = endpoint  // a later file redefines it
                } else {
                    endpoints.append(endpoint)
                }
            default:
                let suggestion = ConfigurationKeys.suggestion(for: section.name, among: ConfigurationKeys.sectionNames)
                problems.append(
                    ConfigurationProblem(
                        file: section.file, line: section.line,
                        "unknown section" + (suggestion.map { " (did you mean [\($0)]?)" } ?? "")
                            + " (expected [Stop], [Start], [Control], [Metrics], [Sleep], [Store] or [Endpoint])"))
            }
        }

        /// Where each setting was last assigned (see ``Loaded/origins``).
        var origins: [String: ConfigAssignment] {
            var origins: [String: ConfigAssignment] = [:]
            for (key, item) in stop.assigned { origins["Stop.\(key)"] = item }
            for (key, item) in start.assigned { origins["Start.\(key)"] = item }
            for (key, item) in control.assigned { origins["Control.\(key)"] = item }
            for (key, item) in metrics.assigned { origins["Metrics.\(key)"] = item }
            for (key, item) in sleep.assigned { origins["Sleep.\(key)"] = item }
            for (key, item) in store.assigned { origins["Store.\(key)"] = item }
            for endpoint in endpoints {
                for (key, item) in endpoint.assigned { origins["Endpoint.\(endpoint.settings.name).\(key)"] = item }
            }
            return origins
        }

        func finish(problems: inout [ConfigurationProblem]) -> Configuration {
            var configuration = Configuration()
            configuration.stop = stop.settings
            configuration.start = start.settings
            configuration.control = control.settings
            configuration.metrics = metrics.settings
            configuration.sleep = sleep.settings
            configuration.store = store.settings
            problems += ConfigurationKeys.check(stop)
            for endpoint in endpoints {
                let found = ConfigurationKeys.check(endpoint)
                problems += found
                if found.isEmpty { configuration.endpoints.append(endpoint.settings) }
            }
            return configuration
        }
    }
}

/// One section's settings as they accumulate, and where each key was last assigned (so a check
/// that involves several keys can name a line).
struct ConfigSectionSettings<Settings> {
    var settings: Settings
    /// The last assignment of each key.
    var assigned: [String: ConfigAssignment] = [:]
    /// Keys whose value was refused (reported already).
    var refused: Set<String> = []
    /// The section's header, for problems of the whole section (`[Endpoint]` without `Name=`).
    var section: ConfigSection?

    init(_ settings: Settings, section: ConfigSection? = nil) {
        self.settings = settings
        self.section = section
    }

    /// Applies every assignment of `section` it has a key for; the rest are problems.
    mutating func apply(_ section: ConfigSection, _ keys: [ConfigKey<Settings>], problems: inout [ConfigurationProblem])
    {
        for item in section.assignments {
            guard let key = keys.first(where: { $0.name == item.key }) else {
                let suggestion = ConfigurationKeys.suggestion(for: item.key, among: keys.map(\.name))
                problems.append(
                    item.problem(
                        "unknown key in [\(section.name)]"
                            + (suggestion.map { " (did you mean \($0)=?)" }
                                ?? " (see the README for the keys of each section)")))
                continue
            }
            do {
                try key.apply(&settings, item)
                assigned[item.key] = item
                refused.remove(item.key)
            } catch {
                problems.append(error as? ConfigurationProblem ?? item.problem("invalid \(item.key)="))
                refused.insert(item.key)
            }
        }
    }
}
