import Foundation

/// Throw-away TLS material from `Tests/Support/make_test_ca.sh`, removed when the test ends: a
/// private CA, a server certificate it signed (127.0.0.1, ::1, localhost), and a self-signed
/// certificate for the same names that nobody trusts, and a client certificate it signed.
struct TestCertificateAuthority {
    let directory: ScratchDirectory

    var caFile: String { directory.path + "/ca.pem" }
    var server: (pem: String, key: String) { (directory.path + "/server.pem", directory.path + "/server.key") }
    var untrusted: (pem: String, key: String) { (directory.path + "/untrusted.pem", directory.path + "/untrusted.key") }
    /// A client certificate the CA signed (extended key usage clientAuth), for mutual TLS.
    var client: (pem: String, key: String) { (directory.path + "/client.pem", directory.path + "/client.key") }

    init() throws {
        directory = try ScratchDirectory("ca")
        let make = Process()
        make.executableURL = URL(fileURLWithPath: "/bin/sh")
        make.arguments = [EndSessionServer.supportDirectory + "/make_test_ca.sh", directory.path]
        make.standardOutput = FileHandle.nullDevice
        make.standardError = FileHandle.nullDevice
        try make.run()
        make.waitUntilExit()
        guard make.terminationStatus == 0 else {
            throw TestSetupError("make_test_ca.sh failed with status \(make.terminationStatus)")
        }
    }
}
