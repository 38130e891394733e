import EventLoop
import Vocabulary

/// A transfer the engine started and has not completed yet: waiting for a slot, or running in
/// libcurl. A reference, so updating one in the engine's ``TransferTable`` never copies its
/// request. The table's tag names it (``TransferID``).
final class ActiveTransfer {
    /// What it asks for.
    let request: HTTPRequest
    /// Runs once, with its result.
    let completion: (HTTPResult) -> Void
    /// When it was started: its timeout runs from here, waiting included.
    let started: MonotonicInstant
    /// When its timeout ends.
    let deadline: MonotonicInstant
    /// Where it goes.
    let origin: HTTPOrigin
    /// Its origin's number in the engine's ``TransferQueue``.
    let originNumber: Int
    /// Its profile's number in the engine's ``TransferPool``.
    let profile: Int
    // Unchecked exclusivity, as for the engine's state (see ``HTTPEngine``): confined to the
    // loop's thread, and every access is one statement.
    /// Counted as running by the queue (it left the line).
    @exclusivity(unchecked) var running = false
    /// The `ccurl_transfer` running it, once handed to libcurl.
    @exclusivity(unchecked) var handle: OpaquePointer?
    /// While waiting for a slot: the loop timer that ends the wait at `deadline`.
    @exclusivity(unchecked) var waitTimer: EventLoop.TimerID?

    /// A transfer of `request` started at `started`.
    init(
        request: HTTPRequest, completion: @escaping (HTTPResult) -> Void, started: MonotonicInstant,
        origin: HTTPOrigin, originNumber: Int, profile: Int
    ) {
        self.request = request
        self.completion = completion
        self.started = started
        deadline = started.advanced(by: request.timeout)
        self.origin = origin
        self.originNumber = originNumber
        self.profile = profile
    }
}
