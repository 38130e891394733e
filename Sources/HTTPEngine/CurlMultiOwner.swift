import CCurl

/// What a ``CurlMulti`` tells the engine that owns it, on the loop's thread, after
/// `curl_multi_socket_action` has returned — never from inside a libcurl callback. The multi
/// handle only reports; the owner decides what becomes of its transfers (``HTTPEngine``
/// implements it).
protocol CurlMultiOwner: AnyObject {
    /// libcurl finished the transfer of `easy` with `code`. The handle is still in the multi
    /// handle: ``CurlMulti/remove(_:)`` it.
    func curlFinished(_ easy: UnsafeMutableRawPointer, _ code: CURLcode)

    /// libcurl or the loop failed inside a callback or `curl_multi_socket_action` (they cannot
    /// throw), with what failed. When it was `curl_multi_socket_action`,
    /// ``curlAbandonedEveryTransfer()`` follows.
    func curlFailed(_ error: HTTPEngineError)

    /// `curl_multi_socket_action` failed: libcurl has failed every transfer it holds without
    /// reporting any of them finished (its multi handle is "dead" until they are all removed), so
    /// the owner must end and ``CurlMulti/remove(_:)`` each one itself.
    func curlAbandonedEveryTransfer()

    /// A `curl_multi_socket_action` and the transfers it finished have all been reported.
    func curlActionDone()
}
