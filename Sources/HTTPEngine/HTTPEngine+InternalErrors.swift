import Vocabulary

/// libcurl's internal failures (``CurlMultiOwner``): reported to ``HTTPEngine/onInternalError``,
/// and when libcurl gave up on its transfers, each ended here so that none is stranded.
extension HTTPEngine {
    /// A libcurl callback or `curl_multi_socket_action` failed: the daemon hears of it.
    func curlFailed(_ error: HTTPEngineError) {
        onInternalError?(error)
    }

    /// libcurl failed every transfer it held after an internal failure and reports none of them
    /// done: each ends here, so none waits for a completion that never comes. With none left in
    /// it, libcurl takes new transfers again.
    func curlAbandonedEveryTransfer() {
        for tag in transfers.tags.sorted() {
            // A completion run by an earlier `finish` may have ended or started others.
            guard let entry = transfers[tag], entry.handle != nil else { continue }
            let failure = TransportFailure(
                kind: .other, peer: entry.origin.peer,
                detail: "libcurl gave up on every transfer after an internal failure of the engine")
            finish(tag, .failure(failure))
        }
    }
}
