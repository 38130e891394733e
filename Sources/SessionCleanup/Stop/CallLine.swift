import Sessions

/// The run's line: the calls not yet taken, in the run's order — sessions in the order given,
/// each session's endpoints in the order it names them. A call leaves the line once, when the
/// run takes it (``take()``) or ends it untried; calls that cannot be made (an endpoint not
/// configured, or whose credentials are unavailable) are never taken, the run ends them at its
/// start (``forEachUncallable(_:)``).
///
/// The line holds two positions, not a list of calls, so it costs nothing per call. Pure
/// bookkeeping, no I/O.
struct CallLine {
    /// A call of the line: the session's index, the endpoint's name and template.
    struct Call {
        /// The session's index in the run's sessions.
        let session: Int
        /// The endpoint's name, as the session names it.
        let endpoint: String
        /// What every call to the endpoint shares.
        let template: EndpointTemplate
    }

    private let sessions: [Session]
    private let templates: [String: EndpointTemplate]
    /// The last name looked up in `templates`: sessions mostly name the same endpoints.
    private var lastTemplate: (name: String, template: EndpointTemplate?)?
    /// The next call not yet taken is `sessions[session].endpoints[endpoint]`.
    private var session = 0
    private var endpoint = 0

    /// The line of every call of `sessions`, with the endpoints' `templates` by name.
    init(sessions: [Session], templates: [String: EndpointTemplate]) {
        self.sessions = sessions
        self.templates = templates
    }

    /// The template of endpoint `name`, nil if it is not configured.
    mutating func template(named name: String) -> EndpointTemplate? {
        if let lastTemplate, lastTemplate.name == name { return lastTemplate.template }
        let template = templates[name]
        lastTemplate = (name, template)
        return template
    }

    /// Calls every call of the line that cannot be made, in the line's order, with its session's
    /// index, the endpoint's name, its template (nil if not configured) and why. The line is
    /// unchanged: ``take()`` skips these calls.
    mutating func forEachUncallable(_ body: (Int, String, EndpointTemplate?, String) -> Void) {
        for (index, session) in sessions.enumerated() {
            for name in session.endpoints {
                guard let template = template(named: name) else {
                    body(index, name, nil, "endpoint '\(name)' is not configured")
                    continue
                }
                if let cause = template.unavailable { body(index, name, template, cause) }
            }
        }
    }

    /// Takes the next call in line that can be made; nil once the line is empty.
    mutating func take() -> Call? {
        while session < sessions.count {
            let endpoints = sessions[session].endpoints
            while endpoint < endpoints.count {
                let name = endpoints[endpoint]
                endpoint += 1
                if let template = callable(name) { return Call(session: session, endpoint: name, template: template) }
            }
            session += 1
            endpoint = 0
        }
        return nil
    }

    /// The template of a call that can be made (configured, its credentials available).
    private mutating func callable(_ name: String) -> EndpointTemplate? {
        guard let template = template(named: name), template.unavailable == nil else { return nil }
        return template
    }
}
