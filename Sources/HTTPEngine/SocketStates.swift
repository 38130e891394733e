/// What ``CurlMulti`` knows of each socket libcurl uses, by descriptor: whether libcurl made it
/// for a connection (and has not closed it), whether libcurl wants it watched, and how it is
/// registered with the loop. Descriptors are small numbers: a lookup is an index, not a hash.
struct SocketStates {
    /// One socket's state.
    struct State: OptionSet, Sendable {
        let rawValue: UInt8

        /// libcurl made it for a connection (reported through `ccurl_sockets`) and has not closed it.
        static let connection = State(rawValue: 1 << 0)
        /// Registered with the loop.
        static let registered = State(rawValue: 1 << 1)
        /// libcurl wants it watched (it is then registered too). Registered and not wanted:
        /// parked, a kept-alive connection between two transfers.
        static let wanted = State(rawValue: 1 << 2)
        /// Registered for reading.
        static let readable = State(rawValue: 1 << 3)
        /// Registered for writing.
        static let writable = State(rawValue: 1 << 4)

        /// Registered, but not wanted by libcurl.
        var isParked: Bool { contains(.registered) && !contains(.wanted) }
    }

    private var states: [State] = []

    /// Descriptors registered with the loop, parked ones included.
    private(set) var registeredCount = 0

    init() {}

    /// The state of `fd` (empty for a descriptor never seen, or a negative one).
    subscript(fd: Int32) -> State {
        get { fd >= 0 && Int(fd) < states.count ? states[Int(fd)] : [] }
        set {
            guard fd >= 0 else { return }
            let index = Int(fd)
            if index >= states.count {
                guard !newValue.isEmpty else { return }
                states += [State](repeating: [], count: index + 1 - states.count)
            }
            registeredCount += (newValue.contains(.registered) ? 1 : 0) - (states[index].contains(.registered) ? 1 : 0)
            states[index] = newValue
        }
    }

    /// Descriptors registered with the loop, in ascending order.
    var registered: [Int32] { descriptors { $0.contains(.registered) } }

    /// Descriptors registered but not wanted by libcurl, in ascending order.
    var parked: [Int32] { descriptors { $0.isParked } }

    private func descriptors(_ predicate: (State) -> Bool) -> [Int32] {
        states.indices.filter { predicate(states[$0]) }.map { Int32($0) }
    }
}
