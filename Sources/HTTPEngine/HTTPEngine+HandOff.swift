import CCurl
import EventLoop
import Vocabulary

/// Handing admitted transfers to libcurl: once per loop turn, after that turn's completions gave
/// their connections back, every transfer a slot is free for is set up in a pooled handle and
/// added to the multi handle; one still waiting when it is due times out here.
extension HTTPEngine {
    /// Schedules the hand-off for this loop turn, unless it is scheduled already.
    func scheduleHandOff() {
        guard handOff == nil else { return }
        handOff = loop.schedule(at: loop.clock.now()) { [unowned self] in self.handOver() }
    }

    /// Hands libcurl every admitted transfer a slot is free for.
    private func handOver() {
        handOff = nil
        while let next = queue.next(isWaiting: { self.transfers[$0]?.running == false }) {
            if let entry = transfers[next.tag] { entry.running = true }
            do {
                try hand(next.tag)
            } catch {
                guard let entry = transfers[next.tag] else { continue }
                finish(next.tag, .failure(TransportFailure(kind: .other, peer: entry.origin.peer, detail: "\(error)")))
            }
        }
        // Usually every transfer got a slot, and none needs a wait timer.
        for tag in admitted where transfers.count > queue.running {
            guard let entry = transfers[tag], !entry.running, entry.waitTimer == nil else { continue }
            entry.waitTimer = loop.schedule(at: entry.deadline) { [unowned self] in self.waitExpired(tag) }
        }
        admitted.removeAll(keepingCapacity: true)
    }

    /// Sets a transfer up in libcurl.
    private func hand(_ tag: UInt64) throws {
        guard let entry = transfers[tag] else { return }
        let subject = entry.request.redactedURL
        let share = try multi.share(forOrigin: entry.originNumber)
        let transfer = try pool.take(profile: entry.profile, share: share, subject: subject)
        ccurl_transfer_begin(transfer, tag, entry.request.maxReplyBytes)
        do {
            try TransferOptions.check(multi.prepare(transfer), "CURLOPT_OPENSOCKETFUNCTION", subject)
            let remaining = entry.deadline.microseconds(since: loop.clock.now())
            try TransferOptions.apply(
                entry.request, to: transfer, timeoutMicroseconds: remaining, pipeWait: waitsToMultiplex(tag, entry))
        } catch {
            pool.put(transfer, profile: entry.profile)
            throw error
        }
        let rc = multi.add(ccurl_transfer_easy(transfer))
        guard rc == CURLM_OK else {
            pool.put(transfer, profile: entry.profile)
            throw HTTPEngineError("curl_multi_add_handle", subject, detail: String(cString: ccurl_multi_strerror(rc)))
        }
        if let waitTimer = entry.waitTimer { loop.cancel(waitTimer) }
        entry.waitTimer = nil
        entry.handle = transfer
    }

    /// A waiting transfer's timeout expired before a slot freed up.
    private func waitExpired(_ tag: UInt64) {
        guard let entry = transfers[tag], !entry.running else { return }
        entry.waitTimer = nil
        let waited = loop.clock.now().duration(since: entry.started)
        let failure = TransportFailure(
            kind: .timeout, peer: entry.origin.peer,
            detail: "timed out after \(waited.millisecondsRoundedUp) ms waiting for a free connection")
        finish(tag, .failure(failure))
    }
}
