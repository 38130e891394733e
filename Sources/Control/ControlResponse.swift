import JSON

/// One response from the daemon: `{"ok":true, …}` or `{"ok":false,"error":…,"code":…}`.
/// Absent members are left out of the JSON. Make them with the static constructors.
package struct ControlResponse: Sendable, Equatable {
    /// Whether the request succeeded.
    package var ok: Bool
    /// `register`: the new session's id.
    package var id: String?
    /// `list`: the sessions.
    package var sessions: [ControlSessionInfo]?
    /// `status`: the daemon's state (an object the daemon fills).
    package var status: JSONValue?
    /// `end` and `report`: what became of the sessions (an object the daemon fills).
    package var report: JSONValue?
    /// Failure: what went wrong, for people.
    package var error: String?
    /// Failure: the kind, for programs.
    package var code: ControlErrorCode?

    /// Creates a response; prefer the static constructors.
    package init(
        ok: Bool, id: String? = nil, sessions: [ControlSessionInfo]? = nil, status: JSONValue? = nil,
        report: JSONValue? = nil, error: String? = nil, code: ControlErrorCode? = nil
    ) {
        self.ok = ok
        self.id = id
        self.sessions = sessions
        self.status = status
        self.report = report
        self.error = error
        self.code = code
    }

    /// `{"ok":true}` (`unregister`).
    package static var success: ControlResponse { ControlResponse(ok: true) }
    /// `{"ok":true,"id":ID}` (`register`).
    package static func registered(id: String) -> ControlResponse { ControlResponse(ok: true, id: id) }
    /// `{"ok":true,"sessions":[…]}` (`list`).
    package static func sessions(_ sessions: [ControlSessionInfo]) -> ControlResponse {
        ControlResponse(ok: true, sessions: sessions)
    }
    /// `{"ok":true,"status":{…}}` (`status`).
    package static func status(_ status: JSONValue) -> ControlResponse { ControlResponse(ok: true, status: status) }
    /// `{"ok":true,"report":{…}}` (`end`, `report`).
    package static func ended(report: JSONValue) -> ControlResponse { ControlResponse(ok: true, report: report) }
    /// `{"ok":true,"report":{"files":[…],"notes":[…]}}` (`reload`): what was read, and what did
    /// not take effect (settings that need a restart).
    package static func reloaded(files: [String], notes: [String]) -> ControlResponse {
        ControlResponse(
            ok: true,
            report: .object(["files": .array(files.map { .string($0) }), "notes": .array(notes.map { .string($0) })]))
    }
    /// `{"ok":false,"error":MESSAGE,"code":CODE}`.
    package static func failure(_ code: ControlErrorCode, _ message: String) -> ControlResponse {
        ControlResponse(ok: false, error: message, code: code)
    }

    /// The response as one line of JSON, newline included: compact, members sorted by name. A
    /// value JSON cannot carry (a NaN in `status`) turns the response into an `internal` error
    /// rather than failing.
    package func encodedLine() -> [UInt8] {
        var writer = JSONWriter()
        var bytes: [UInt8]
        do {
            try write(to: &writer)
            bytes = writer.bytes
        } catch {
            bytes = Array(#"{"code":"internal","error":"the daemon could not encode its reply","ok":false}"#.utf8)
        }
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    /// Writes the members that are there, sorted by name.
    private func write(to writer: inout JSONWriter) throws(JSONWriter.UnrepresentableNumber) {
        writer.beginObject()
        if let code {
            writer.member("code")
            writer.string(code.rawValue)
        }
        if let error {
            writer.member("error")
            writer.string(error)
        }
        if let id {
            writer.member("id")
            writer.string(id)
        }
        writer.member("ok")
        writer.bool(ok)
        if let report {
            writer.member("report")
            try writer.value(report)
        }
        if let sessions {
            writer.member("sessions")
            try sessions.write(to: &writer)
        }
        if let status {
            writer.member("status")
            try writer.value(status)
        }
        writer.endObject()
    }

    /// Decodes one response line (without its newline). Members this build does not know are
    /// left alone (a newer daemon may add some); a `null` member counts as absent.
    package static func decode(line: some Collection<UInt8>) throws(ControlProtocolError) -> ControlResponse {
        let invalid = ControlProtocolError(.badRequest, "the reply is not a valid control-protocol response")
        do {
            var fields = try ControlFields(try StrictJSON.parse(line), notAnObject: invalid)
            guard let ok = try fields.bool("ok") else { throw invalid }
            return ControlResponse(
                ok: ok, id: try fields.string("id"), sessions: try fields.objects("sessions", ControlSessionInfo.read),
                status: fields.any("status"), report: fields.any("report"), error: try fields.string("error"),
                code: try fields.string("code").map(ControlErrorCode.init(rawValue:)))
        } catch {
            throw invalid
        }
    }
}
