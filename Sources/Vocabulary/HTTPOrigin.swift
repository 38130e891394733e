/// Where a request goes — scheme, host and port: what connections are pooled, queued and
/// limited by, and what a failure names (``peer``; never the path or query, which may hold a
/// session key).
package struct HTTPOrigin: Hashable, Sendable, CustomStringConvertible {
    /// `https` (true) or `http`.
    package let isTLS: Bool
    /// The host, lower-cased; an IPv6 literal keeps its brackets.
    package let host: String
    /// The port, the scheme's default when the URL gives none.
    package let port: Int

    /// Creates an origin from its parts.
    package init(isTLS: Bool, host: String, port: Int) {
        self.isTLS = isTLS
        self.host = host
        self.port = port
    }

    /// The origin of an `http://` or `https://` URL (the scheme in any case), or nil when the URL
    /// has another scheme, no host, or a port that is not a number from 1 to 65535. A user
    /// name and password before `@` are skipped (they are never part of the origin).
    package init?(url: String) {
        let bytes = Array(url.utf8)
        func hasPrefix(_ prefix: String) -> Bool {
            let wanted = Array(prefix.utf8)
            guard bytes.count >= wanted.count else { return false }
            for (index, byte) in wanted.enumerated() where Self.lower(bytes[index]) != byte { return false }
            return true
        }
        let isTLS: Bool
        let start: Int
        if hasPrefix("https://") {
            (isTLS, start) = (true, 8)
        } else if hasPrefix("http://") {
            (isTLS, start) = (false, 7)
        } else {
            return nil
        }
        var end = start
        while end < bytes.count, ![UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#")].contains(bytes[end]) {
            end += 1
        }
        var authority = bytes[start..<end]
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) { authority = authority[(at + 1)...] }
        var hostBytes = authority
        var portBytes: ArraySlice<UInt8> = []
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            hostBytes = authority[...close]
            let rest = authority[(close + 1)...]
            if let colon = rest.first {
                guard colon == UInt8(ascii: ":") else { return nil }
                portBytes = rest.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: UInt8(ascii: ":")) {
            hostBytes = authority[..<colon]
            portBytes = authority[(colon + 1)...]
        }
        guard !hostBytes.isEmpty, hostBytes.count <= 255 else { return nil }
        var port = isTLS ? 443 : 80
        if !portBytes.isEmpty {
            guard portBytes.count <= 5, portBytes.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                let value = Int(String(decoding: portBytes, as: UTF8.self)), (1...65535).contains(value)
            else { return nil }
            port = value
        }
        self.init(isTLS: isTLS, host: String(decoding: hostBytes.map(Self.lower), as: UTF8.self), port: port)
    }

    private static func lower(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
    }

    /// `host:port`, as failures name the peer.
    package var peer: String { "\(host):\(port)" }

    /// `https://host:port`.
    package var description: String { (isTLS ? "https://" : "http://") + peer }
}
