import Basics
import Glibc
import Vocabulary

/// What `check-config` checks beyond the files' own meaning: that what the configuration names
/// exists on this host and is usable by the service, so a mistake shows now and not at the
/// shutdown that needed it.
///
/// - every `CAFile=` exists, is a regular file the service user can read, and holds PEM
///   certificates (each block's base64 decodes to a DER sequence);
/// - `SocketGroup=` names a group that exists (it is used when the daemon makes its own socket);
/// - warnings: a `BudgetSec=` long enough to hold up every shutdown noticeably; a service user
///   that does not exist (the files' readability could not be checked for it); an endpoint that
///   looks like RFC 7009 revocation or Keystone but judges replies otherwise
///   (``EndpointProtocolCheck``); a `TokenURL=` over plain `http` to a host that is not loopback
///   (the client secret would cross the network unencrypted).
package enum ConfigurationCheck {
    /// The user the packaged service runs as (`systemd/session-cleanup.sysusers`).
    package static let serviceUser = "session-cleanup"
    /// A budget above this holds every shutdown up for that long when servers do not answer.
    package static let longBudget: Duration = .seconds(300)

    /// What was found: problems make the configuration invalid; warnings do not.
    package struct Findings: Sendable, Equatable {
        /// Errors, naming the file and line of the setting.
        package var problems: [ConfigurationProblem] = []
        /// Warnings, likewise.
        package var warnings: [ConfigurationProblem] = []
    }

    /// Checks `configuration`, whose settings were last assigned where `origins` says (key
    /// `Endpoint.NAME.CAFile`, `Control.SocketGroup`, `Stop.BudgetSec`; missing: no line).
    /// `serviceUser` is the account the files must be readable by (nil: the caller's own).
    package static func check(
        _ configuration: Configuration, origins: [String: ConfigAssignment] = [:], serviceUser: String? = serviceUser
    ) -> Findings {
        var findings = Findings()
        func at(_ key: String) -> (file: String, line: Int) {
            (origins[key]?.file ?? "", origins[key]?.line ?? 0)
        }
        var account: (uid: uid_t, gid: gid_t, groups: [gid_t])?
        let caFiles = configuration.endpoints.contains { $0.caFile != nil }
        if let serviceUser {
            account = AccountLookup.account(serviceUser)
            if account == nil && caFiles {
                findings.warnings.append(
                    ConfigurationProblem(
                        file: "", line: 0,
                        "user '\(serviceUser)' does not exist here (systemd-sysusers creates it from the package): "
                            + "CAFile= was checked for this user, not for the service"))
            }
        }
        for endpoint in configuration.endpoints {
            guard let path = endpoint.caFile else { continue }
            let (file, line) = at("Endpoint.\(endpoint.name).CAFile")
            if let problem = caFileProblem(path, readableBy: account) {
                findings.problems.append(
                    ConfigurationProblem(file: file, line: line, "CAFile= of [Endpoint] '\(endpoint.name)': \(problem)")
                )
            }
        }
        for endpoint in configuration.endpoints {
            guard let url = endpoint.tokenURL, let origin = HTTPOrigin(url: url), !origin.isTLS,
                !isLoopback(origin.host)
            else { continue }
            let (file, line) = at("Endpoint.\(endpoint.name).TokenURL")
            findings.warnings.append(
                ConfigurationProblem(
                    file: file, line: line,
                    "TokenURL= of [Endpoint] '\(endpoint.name)' is plain http to \(origin.host): the client's secret "
                        + "and the access token would cross the network unencrypted; use https"))
        }
        let group = configuration.control.socketGroup
        if !group.isEmpty {
            do {
                _ = try AccountLookup.groupID(group)
            } catch {
                let (file, line) = at("Control.SocketGroup")
                findings.problems.append(ConfigurationProblem(file: file, line: line, "SocketGroup=\(group): \(error)"))
            }
        }
        if configuration.stop.budget > longBudget {
            let (file, line) = at("Stop.BudgetSec")
            findings.warnings.append(
                ConfigurationProblem(
                    file: file, line: line,
                    "BudgetSec= is \(configuration.stop.budget.humanReadable): every stop, reboot and poweroff may wait "
                        + "that long for servers that do not answer"))
        }
        for endpoint in configuration.endpoints {
            let (file, line) = at("Endpoint.\(endpoint.name).URL")
            findings.warnings += EndpointProtocolCheck.warnings(for: endpoint, file: file, line: line)
        }
        // In file and line order, like the loader's.
        let byLine: (ConfigurationProblem, ConfigurationProblem) -> Bool = { ($0.file, $0.line) < ($1.file, $1.line) }
        findings.problems.sort(by: byLine)
        findings.warnings.sort(by: byLine)
        return findings
    }

    /// Why `path` cannot serve as a CA bundle, or nil.
    static func caFileProblem(_ path: String, readableBy account: (uid: uid_t, gid: gid_t, groups: [gid_t])?) -> String?
    {
        let bytes: [UInt8]
        do {
            bytes = try FileReading.contents(of: path, limit: 16 << 20)
        } catch {
            return "\(error)"
        }
        if let account, let reason = AccountLookup.unreadable(path, by: account) {
            return "user '\(serviceUser)' cannot read it (\(reason))"
        }
        return PEMCertificates.problem(in: bytes)
    }

    /// Whether `host` (as ``HTTPOrigin`` writes it) is this machine: `localhost`, 127.0.0.0/8 or `[::1]`.
    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host.hasSuffix(".localhost") || host == "[::1]"
            || (host.hasPrefix("127.") && host.allSatisfy { $0.isASCII && ($0.isNumber || $0 == ".") })
    }
}

/// PEM certificate bundles: `-----BEGIN CERTIFICATE-----`, base64, `-----END CERTIFICATE-----`.
enum PEMCertificates {
    /// Why `bytes` is not a bundle of at least one certificate, or nil. Other PEM blocks (a
    /// private key by mistake) do not count as certificates.
    static func problem(in bytes: [UInt8]) -> String? {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            return "not text (is it DER? convert it to PEM)"
        }
        let begin = "-----BEGIN CERTIFICATE-----"
        let end = "-----END CERTIFICATE-----"
        var certificates = 0
        var rest = Substring(text)
        while let start = rest.rangeOfText(begin) {
            guard let stop = rest[start.upperBound...].rangeOfText(end) else {
                return "certificate \(certificates + 1) has no END line"
            }
            let body = rest[start.upperBound..<stop.lowerBound].filter { !$0.isWhitespace }
            guard let der = Base64.decode(String(body)), isDERSequence(der) else {
                return "certificate \(certificates + 1) is not valid base64 DER"
            }
            certificates += 1
            rest = rest[stop.upperBound...]
        }
        return certificates > 0 ? nil : "no PEM certificate in it (expected \(begin) blocks)"
    }

    /// A DER SEQUENCE whose length covers exactly the bytes.
    private static func isDERSequence(_ der: [UInt8]) -> Bool {
        guard der.count >= 2, der[0] == 0x30 else { return false }
        let first = Int(der[1])
        if first < 0x80 { return der.count == 2 + first }
        let octets = first & 0x7F
        guard (1...4).contains(octets), der.count >= 2 + octets else { return false }
        var length = 0
        for byte in der[2..<(2 + octets)] { length = length << 8 | Int(byte) }
        return der.count == 2 + octets + length
    }
}
