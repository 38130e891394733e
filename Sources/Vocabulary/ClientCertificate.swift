/// A TLS client certificate and its private key (mutual TLS: `ClientCertificateCredential=`,
/// `ClientKeyCredential=`), PEM, from systemd credentials. Handed to libcurl from memory and
/// never written to a file; the key is a secret: ``description`` and `dump` never show it.
package struct ClientCertificate: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    /// The certificate (and any intermediate certificates after it), PEM.
    package let certificate: [UInt8]
    /// The private key, PEM, unencrypted. Secret.
    package let key: [UInt8]

    /// Pairs a certificate with its key.
    package init(certificate: [UInt8], key: [UInt8]) {
        self.certificate = certificate
        self.key = key
    }

    /// `<client certificate>`.
    package var description: String { "<client certificate>" }

    /// Nothing: the certificate and key stay out of `dump`.
    package var customMirror: Mirror { Mirror(self, children: [:]) }
}
