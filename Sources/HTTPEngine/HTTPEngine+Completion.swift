import CCurl
import Vocabulary

/// Completing a transfer: libcurl's finished transfer becomes an ``HTTPResult``, the transfer
/// leaves the queue, the planner and its handle, and its completion runs.
extension HTTPEngine {
    /// libcurl finished the transfer of `easy` with `code` (``CurlMultiOwner``).
    func curlFinished(_ easy: UnsafeMutableRawPointer, _ code: CURLcode) {
        guard let transfer = ccurl_transfer_of(easy) else {
            multi.remove(easy)
            return
        }
        let tag = ccurl_transfer_tag(transfer)
        guard let entry = transfers[tag], entry.handle == transfer else {
            // Not ours any more (cannot happen): detach it so libcurl forgets it.
            multi.remove(easy)
            ccurl_transfer_free(transfer)
            return
        }
        var info = ccurl_finished_info()
        ccurl_transfer_finished_info(transfer, &info)
        let outcome = TransferOutcome.of(
            transfer, code: code, status: info.status, request: entry.request, origin: entry.origin)
        // No new connect, yet connected to a port: a kept-alive connection was reused.
        finish(
            tag, outcome, reusedConnection: info.connects == 0 && info.port > 0,
            httpVersion: TransferOutcome.httpVersion(info.http_version), opened: info.connects > 0,
            requestSent: TransferOutcome.requestSent(transfer, code: code))
    }

    /// Ends a transfer wherever it is (waiting or running), frees its slot, and runs its
    /// completion.
    ///
    /// `opened`: whether the transfer opened a connection of its own (libcurl finished it and said
    /// so); nil: ask libcurl, if the transfer got as far as a connection. `requestSent`: whether
    /// the server may have its request (``HTTPResult/requestSent``); nil: ask libcurl.
    func finish(
        _ tag: UInt64, _ outcome: HTTPResult.Outcome, reusedConnection: Bool = false, httpVersion: String? = nil,
        opened: Bool? = nil, requestSent: Bool? = nil
    ) {
        guard let entry = transfers.remove(tag) else { return }
        let requestSent = requestSent ?? entry.handle.map { ccurl_transfer_request_sent($0) != 0 } ?? false
        let connected = entry.handle.map { ccurl_transfer_connected($0) != 0 } ?? false
        let opened = connected && (opened ?? entry.handle.map(Self.openedConnection) ?? false)
        multiplexing.finished(
            tag, origin: entry.originNumber, version: httpVersion, opened: opened,
            running: entry.running ? queue.running(entry.originNumber) : 0)
        if let httpVersion {
            versions.replied(httpVersion, to: entry.request, origin: entry.origin, number: entry.originNumber)
        }
        applyLimit(entry.originNumber)
        if let handle = entry.handle {
            multi.remove(ccurl_transfer_easy(handle))
            pool.put(handle, profile: entry.profile)
        }
        if let waitTimer = entry.waitTimer { loop.cancel(waitTimer) }
        if entry.running {
            queue.finished(entry.originNumber)
            if transfers.count > queue.running { scheduleHandOff() }
        }
        if transfers.isEmpty, let handOff {
            // Nothing left to hand over (the last waiting transfers were cancelled).
            loop.cancel(handOff)
            self.handOff = nil
            admitted.removeAll(keepingCapacity: true)
        }
        let duration = loop.clock.now().duration(since: entry.started)
        entry.completion(
            HTTPResult(
                outcome: outcome, duration: duration, reusedConnection: reusedConnection, httpVersion: httpVersion,
                requestSent: requestSent))
        // Idle once the completion started nothing new: no descriptor stays registered.
        if transfers.isEmpty { multi.releaseParked() }
    }
}
