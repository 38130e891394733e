import CCurl
import Vocabulary

/// What a finished libcurl transfer amounts to: a reply, or a ``TransportFailure`` whose text
/// is scrubbed of everything in the request but its host.
enum TransferOutcome {
    /// The outcome of `transfer`, which libcurl finished with `code` and HTTP `status` (0: no
    /// response), for `request` to `origin`.
    static func of(
        _ transfer: OpaquePointer, code: CURLcode, status: Int, request: HTTPRequest, origin: HTTPOrigin
    ) -> HTTPResult.Outcome {
        let abortReason = ccurl_transfer_abort_reason(transfer)
        let truncated = code == CURLE_WRITE_ERROR && abortReason == Int32(CCURL_ABORT_BODY_CAP)
        if (code == CURLE_OK || truncated) && status > 0 {
            var length = 0
            let bytes = ccurl_transfer_body(transfer, &length)
            let body = bytes.map { Array(UnsafeBufferPointer(start: $0, count: length)) } ?? []
            let retryAfter = ccurl_transfer_retry_after(transfer)
            return .response(
                status: status, body: body, truncated: truncated,
                retryAfter: retryAfter >= 0 ? .seconds(retryAfter) : nil)
        }
        let curlCode = Int(code.rawValue)
        let peer = origin.peer
        switch abortReason {
        case Int32(CCURL_ABORT_HEADER_CAP):
            let detail = "reply headers exceed \(CCURL_MAX_HEADER_BYTES) bytes"
            return .failure(TransportFailure(kind: .tooLarge, peer: peer, detail: detail, curlCode: curlCode))
        case Int32(CCURL_ABORT_NO_MEMORY):
            let detail = "out of memory buffering the reply"
            return .failure(TransportFailure(kind: .other, peer: peer, detail: detail, curlCode: curlCode))
        default:
            let raw = String(cString: ccurl_transfer_error_text(transfer))
            let text = raw.isEmpty ? String(cString: ccurl_easy_strerror(code)) : raw
            // The proxy's user name and password count as secrets too.
            let proxySecrets = request.proxy?.credential.map { [$0.user, $0.password] } ?? []
            let detail = SecretScrubber(url: request.url, headers: request.headers + proxySecrets).scrub(text)
            return .failure(
                TransportFailure(
                    kind: kind(of: code), peer: peer, detail: "\(detail) (curl error \(curlCode))",
                    curlCode: curlCode))
        }
    }

    /// Whether the server may have the request of `transfer`, which libcurl finished with `code`:
    /// libcurl wrote it (`ccurl_transfer_request_sent`), and did not fail sending it. A send
    /// error is the write failing, or libcurl giving up on a connection that died before any
    /// answer each time it tried ("Connection died, tried 5 times"): over HTTP/2 that is streams
    /// the server refused (`REFUSED_STREAM`, or above a `GOAWAY`'s last stream id), which it
    /// did not process, so another attempt is safe (measured: 3 of 1,000 against nginx sending
    /// GOAWAY every 50 streams).
    static func requestSent(_ transfer: OpaquePointer, code: CURLcode) -> Bool {
        code != CURLE_SEND_ERROR && ccurl_transfer_request_sent(transfer) != 0
    }

    /// The HTTP version of a reply (libcurl's `CURLINFO_HTTP_VERSION`), as `1.0`, `1.1` or `2`;
    /// nil if none.
    static func httpVersion(_ version: Int) -> String? {
        switch version {
        case CURL_HTTP_VERSION_1_0: return "1.0"
        case CURL_HTTP_VERSION_1_1: return "1.1"
        case CURL_HTTP_VERSION_2_0: return "2"
        default: return nil
        }
    }

    /// The broad cause of a libcurl failure.
    static func kind(of code: CURLcode) -> TransportFailure.Kind {
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return .resolve
        case CURLE_COULDNT_CONNECT:
            return .connect
        case CURLE_OPERATION_TIMEDOUT:
            return .timeout
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
            CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CRL_BADFILE, CURLE_SSL_ENGINE_NOTFOUND,
            CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED, CURLE_SSL_SHUTDOWN_FAILED,
            CURLE_USE_SSL_FAILED:
            return .tls
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_HTTP2,
            CURLE_HTTP2_STREAM:
            return .sendReceive
        case CURLE_FILESIZE_EXCEEDED:
            return .tooLarge
        default:
            return .other
        }
    }
}
