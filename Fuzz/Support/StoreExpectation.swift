import Sessions

/// What a reader must find of a store whose frames survived damage or not: the sessions it must
/// recover and those it must not bring back. A session counts only if its whole surviving
/// history is known: created (in an intact snapshot frame or an intact commit) and not touched
/// since by a damaged commit. This is the fuzz targets' "a store that loads never has fewer
/// sessions than its undamaged frames hold".
package struct StoreExpectation {
    /// Sessions that must be there, with the value they must have when every frame that
    /// changed them is intact (nil: present, value unknown).
    package private(set) var present: [SessionID: Session?] = [:]
    /// Sessions an intact frame removed: they must not come back.
    package private(set) var absent: Set<SessionID> = []

    /// `snapshot`: each session of the snapshot and whether its frame is intact; `commits`:
    /// the changes of each log commit, in order, and whether its frame is intact.
    package init(
        snapshot: [(session: Session, intact: Bool)], commits: [(changes: [StoreInspection.Change], intact: Bool)]
    ) {
        enum State {
            case present(Session, exact: Bool)
            case absent
            case unknown
        }
        var states: [SessionID: State] = [:]
        for (s, intact) in snapshot { states[s.id] = intact ? .present(s, exact: true) : .unknown }
        for (changes, intact) in commits {
            for change in changes {
                switch (change, intact) {
                case (.register(let s), true): states[s.id] = .present(s, exact: true)
                case (.register(let s), false): states[s.id] = .unknown
                case (.remove(let id), true): states[id] = .absent
                case (.remove(let id), false): states[id] = .unknown
                case (.outcome(let id, let attempts, let last), true):
                    if case .present(var s, let exact) = states[id] {
                        s.attempts = attempts
                        s.lastOutcome = last
                        states[id] = .present(s, exact: exact)
                    }
                case (.outcome(let id, _, _), false):
                    if case .present(let s, _) = states[id] { states[id] = .present(s, exact: false) }
                }
            }
        }
        for (id, state) in states {
            switch state {
            case .present(let s, let exact): present[id] = exact ? s : Session?.none
            case .absent: absent.insert(id)
            case .unknown: break
            }
        }
    }

    /// Stops the process (a fuzz finding) unless `recovered` holds every session that must be
    /// there, with its value where known, and none that must not. `context` describes the damage.
    package func check(_ recovered: [SessionID: Session], _ context: @autoclosure () -> String) {
        for (id, value) in present {
            Fuzz.require(recovered[id] != nil, "session \(id) lost although its history is intact (\(context()))")
            if let value { Fuzz.require(recovered[id] == value, "session \(id) recovered with another value") }
        }
        for id in absent {
            Fuzz.require(recovered[id] == nil, "session \(id) came back although an intact frame removed it")
        }
    }
}

extension [Session] {
    /// The sessions by id (the first of any two with one id).
    package var byID: [SessionID: Session] { Dictionary(map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a }) }
}
