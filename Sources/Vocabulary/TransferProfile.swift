/// The options a request shares with every other request to the same endpoint: set on a pooled
/// easy handle once, kept while the handle serves requests with an equal profile.
///
/// Immutable and shared: the requests of one endpoint carry the same profile object (its
/// ``EndpointTemplate`` makes it once), so a copy of a request costs no copy of these fields,
/// and the engine's ``TransferPool`` recognises a profile by identity before comparing values.
package final class TransferProfile: Sendable, Equatable {
    /// ``HTTPRequest/caFile``.
    package let caFile: String?
    /// ``HTTPRequest/version``.
    package let version: HTTPRequest.Version
    /// ``HTTPRequest/proxy``.
    package let proxy: HTTPProxy?
    /// The TLS client certificate and key every request presents (mutual TLS), or nil.
    package let clientCertificate: ClientCertificate?

    /// Creates a profile.
    package init(
        caFile: String?, version: HTTPRequest.Version, proxy: HTTPProxy?, clientCertificate: ClientCertificate? = nil
    ) {
        self.caFile = caFile
        self.version = version
        self.proxy = proxy
        self.clientCertificate = clientCertificate
    }

    /// The same options (the same object, or equal fields).
    package static func == (a: TransferProfile, b: TransferProfile) -> Bool {
        a === b
            || (a.version == b.version && a.caFile == b.caFile && a.proxy == b.proxy
                && a.clientCertificate == b.clientCertificate)
    }
}
