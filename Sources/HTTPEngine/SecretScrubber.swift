import Basics

/// Removes a request's secrets from text that libcurl wrote (its error buffer), keeping the host.
///
/// libcurl's messages name the host and port ("Failed to connect to auth.example port 443");
/// a few could echo more of the URL. Everything of the URL after the authority (path, query,
/// fragment), the user information, and every header line and value are treated as secret,
/// whole and in pieces (path segments, query names and values, words of header values), and
/// replaced by `…`. Pieces shorter than ``minimumSecretLength`` are left alone: they are not
/// plausible keys and replacing them would garble the text.
struct SecretScrubber {
    /// The shortest piece treated as a secret.
    static let minimumSecretLength = 4
    /// What replaces a secret.
    static let replacement = "…"

    /// The secrets, longest first so a whole is replaced before its pieces.
    let secrets: [String]

    init(url: String, headers: [String]) {
        var found: [String] = []
        func add(_ piece: Substring) {
            let trimmed = piece.drop(while: { $0 == " " || $0 == "\t" })
            if trimmed.count >= Self.minimumSecretLength { found.append(String(trimmed)) }
        }
        let separators: Set<Character> = ["/", "?", "&", "=", "#", ";", ",", "+", " ", "\t", ":", "@"]
        // Authority: after "scheme://" up to the first "/", "?" or "#".
        let afterScheme: Substring
        if let range = url.rangeOfText("://") {
            afterScheme = url[range.upperBound...]
        } else {
            afterScheme = url[...]
        }
        let authorityEnd =
            afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? afterScheme.endIndex
        let authority = afterScheme[..<authorityEnd]
        let rest = afterScheme[authorityEnd...]
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            add(userInfo)
            for piece in userInfo.split(separator: ":") { add(piece) }
        }
        add(rest)
        for piece in rest.split(whereSeparator: { separators.contains($0) }) { add(piece) }
        if url.count >= Self.minimumSecretLength { found.append(url) }
        for line in headers {
            add(line[...])
            if let colon = line.firstIndex(of: ":") {
                let value = line[line.index(after: colon)...]
                add(value)
                for piece in value.split(whereSeparator: { separators.contains($0) }) { add(piece) }
            }
        }
        secrets = Set(found).sorted { $0.count > $1.count }
    }

    /// `text` with every secret replaced.
    func scrub(_ text: String) -> String {
        var result = text
        for secret in secrets where result.containsText(secret) {
            result = result.replacingText(secret, with: Self.replacement)
        }
        return result
    }
}
