import Basics
import CCurl
import Vocabulary

/// Sets libcurl options on an engine's easy handles. Security-relevant ones are set whatever a
/// request says: peer and host verification on, `http`/`https` only, no redirects, no proxy
/// but the request's own (never the environment's).
enum TransferOptions {
    /// libcurl's receive buffer per handle: its minimum. A pool keeps a handle per transfer in
    /// flight (256 by default), each with this buffer; 1 KiB instead of 4 left 0.8 MB less
    /// resident at 256 handles (measured with the C floor when the daemon's went from 4 KiB to
    /// 1 KiB, commit dac6b89; the figures are in that commit's BENCHMARKS.md).
    static let receiveBufferBytes = 1024

    /// Options for every request of `profile`, on a new or reset handle.
    static func configure(_ transfer: OpaquePointer, for profile: TransferProfile, subject: String) throws {
        let easy = ccurl_transfer_easy(transfer)
        let setter = Setter(easy: easy, subject: subject)
        // Ending a transfer that is still resolving would otherwise join the resolver thread,
        // blocking the loop until getaddrinfo gives up; detach it instead.
        let quickExit = ccurl_easy_set_long(easy, CURLOPT_QUICK_EXIT, 1)
        if quickExit != CURLE_UNKNOWN_OPTION { try check(quickExit, "CURLOPT_QUICK_EXIT", subject) }
        try setter.set(CURLOPT_PROTOCOLS_STR, "http,https", "CURLOPT_PROTOCOLS_STR")
        try setter.set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https", "CURLOPT_REDIR_PROTOCOLS_STR")
        try setter.set(CURLOPT_FOLLOWLOCATION, 0, "CURLOPT_FOLLOWLOCATION")
        try setter.set(CURLOPT_SSL_VERIFYPEER, 1, "CURLOPT_SSL_VERIFYPEER")
        try setter.set(CURLOPT_SSL_VERIFYHOST, 2, "CURLOPT_SSL_VERIFYHOST")
        // libcurl's receive buffer (16 KB by default) stays allocated with each pooled handle; an
        // end-session reply is small, and a larger one is only read in more pieces.
        try setter.set(CURLOPT_BUFFERSIZE, Self.receiveBufferBytes, "CURLOPT_BUFFERSIZE")
        if let caFile = profile.caFile {
            // The private CA alone: the system's certificate directory must not widen it.
            try setter.set(CURLOPT_CAINFO, caFile, "CURLOPT_CAINFO")
            try setter.set(CURLOPT_CAPATH, nil, "CURLOPT_CAPATH")
        }
        if let client = profile.clientCertificate {
            // From memory (libcurl copies the blobs): the key never touches the disk.
            try setter.set(CURLOPT_SSLCERTTYPE, "PEM", "CURLOPT_SSLCERTTYPE")
            try setter.set(CURLOPT_SSLCERT_BLOB, client.certificate, "CURLOPT_SSLCERT_BLOB")
            try setter.set(CURLOPT_SSLKEYTYPE, "PEM", "CURLOPT_SSLKEYTYPE")
            try setter.set(CURLOPT_SSLKEY_BLOB, client.key, "CURLOPT_SSLKEY_BLOB")
        }
        let version: Int
        switch profile.version {
        case .automatic: version = CURL_HTTP_VERSION_2TLS
        case .http1_1: version = CURL_HTTP_VERSION_1_1
        case .http2: version = CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE
        }
        try setter.set(CURLOPT_HTTP_VERSION, version, "CURLOPT_HTTP_VERSION")
        if let proxy = profile.proxy {
            try setter.set(CURLOPT_PROXY, proxy.url, "CURLOPT_PROXY")
            // Set even when empty: unset, libcurl would read $no_proxy.
            try setter.set(CURLOPT_NOPROXY, proxy.noProxy, "CURLOPT_NOPROXY")
            if let credential = proxy.credential {
                try setter.set(CURLOPT_PROXYUSERNAME, credential.user, "CURLOPT_PROXYUSERNAME")
                try setter.set(CURLOPT_PROXYPASSWORD, credential.password, "CURLOPT_PROXYPASSWORD")
            }
        } else {
            // "" disables proxies, $http_proxy, $https_proxy and $all_proxy included.
            try setter.set(CURLOPT_PROXY, "", "CURLOPT_PROXY")
        }
    }

    /// The options of this one request: URL, time limits (`timeoutMicroseconds`: what is left of
    /// its timeout), method, body, headers, and whether to wait for a connection that can
    /// multiplex (`pipeWait`) rather than open another.
    static func apply(
        _ request: HTTPRequest, to transfer: OpaquePointer, timeoutMicroseconds: Int64, pipeWait: Bool
    ) throws {
        let subject = request.redactedURL
        // What is left of the request's timeout (it may have waited for a slot), rounded up.
        let timeoutMS = max(1, timeoutMicroseconds <= 0 ? 0 : (timeoutMicroseconds + 999) / 1_000)
        let connectTimeoutMS = min(timeoutMS, max(1, request.connectTimeout?.millisecondsRoundedUp ?? timeoutMS))
        var failed: UnsafePointer<CChar>?
        let rc = request.url.withCString {
            ccurl_transfer_set_request(transfer, $0, Int(timeoutMS), Int(connectTimeoutMS), pipeWait ? 1 : 0, &failed)
        }
        try check(rc, failed.map { String(cString: $0) } ?? "CURLOPT_URL", subject)

        // A released handle is back to GET with no body (ccurl_transfer_release).
        var sendsBody = false
        switch request.method {
        case .get:
            break
        case .post:
            sendsBody = true
        case .put, .delete:
            try check(
                ccurl_transfer_set_method(transfer, request.method.rawValue), "CURLOPT_CUSTOMREQUEST", subject)
            sendsBody = request.method == .put || request.body != nil
        }
        if sendsBody {
            let body = request.body ?? []
            let rc = body.withUnsafeBufferPointer { ccurl_transfer_set_body(transfer, $0.baseAddress, $0.count) }
            try check(rc, "CURLOPT_COPYPOSTFIELDS", subject)
        }

        var hasExpect = false
        var hasUserAgent = false
        for line in request.headers {
            if line.utf8.count >= 7, line.lowercased().hasPrefix("expect:") { hasExpect = true }
            if line.lowercased().hasPrefix("user-agent:") { hasUserAgent = true }
            guard line.withCString({ ccurl_transfer_add_header(transfer, $0) }) == 0 else {
                throw HTTPEngineError("add header", subject, detail: "out of memory")
            }
        }
        // Servers' logs name the caller (an endpoint's own Header=User-Agent: wins).
        if !hasUserAgent,
            Self.userAgentLine.withUnsafeBufferPointer({ ccurl_transfer_add_header(transfer, $0.baseAddress) }) != 0
        {
            throw HTTPEngineError("add header", subject, detail: "out of memory")
        }
        // libcurl would wait up to a second for `100 Continue` before sending a large body.
        if sendsBody, !hasExpect, ccurl_transfer_add_header(transfer, "Expect:") != 0 {
            throw HTTPEngineError("add header", subject, detail: "out of memory")
        }
        try check(ccurl_transfer_apply_headers(transfer), "CURLOPT_HTTPHEADER", subject)
    }

    /// `User-Agent: session-cleanup/0.1.0`, on every request. A header rather than
    /// `CURLOPT_USERAGENT`, which libcurl formats anew for every request (~4,000 instructions a
    /// call, measured, against ~3,000 for the header).
    static let userAgent = "User-Agent: session-cleanup/\(SessionCleanupVersion.string)"
    /// ``userAgent`` as a C string, made once: passing the `String` made one per request.
    static let userAgentLine = userAgent.utf8CString

    static func check(_ rc: CURLcode, _ operation: String, _ subject: String) throws {
        guard rc == CURLE_OK else {
            throw HTTPEngineError(operation, subject, detail: String(cString: ccurl_easy_strerror(rc)))
        }
    }

    /// Typed setters for one handle; errors name the option and the request's redacted URL.
    private struct Setter {
        let easy: UnsafeMutableRawPointer?
        let subject: String

        func set(_ option: CURLoption, _ value: Int, _ name: String) throws {
            try check(ccurl_easy_set_long(easy, option, value), name, subject)
        }

        func set(_ option: CURLoption, _ value: [UInt8], _ name: String) throws {
            let rc = value.withUnsafeBytes { ccurl_easy_set_blob(easy, option, $0.baseAddress, $0.count) }
            try check(rc, name, subject)
        }

        func set(_ option: CURLoption, _ value: String?, _ name: String) throws {
            let rc =
                value.map { $0.withCString { ccurl_easy_set_string(easy, option, $0) } }
                ?? ccurl_easy_set_string(easy, option, nil)
            try check(rc, name, subject)
        }
    }
}
