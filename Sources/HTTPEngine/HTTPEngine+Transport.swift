import Vocabulary

/// The engine is the daemon's transport; tests pass their own.
extension HTTPEngine: HTTPTransport {}
