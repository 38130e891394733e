// swift-tools-version:6.0
import PackageDescription

/// session-cleanup: a systemd daemon that ends registered remote sessions when it is stopped.
///
/// One target per concern; each folder under `Sources/` is a target, and the build checks that
/// every target imports only what it depends on (`--explicit-target-dependency-import-check
/// error`, in scripts/test.sh). From the bottom up:
///
/// - C shims: `CSystemd` (libsystemd: notify, journal, D-Bus, socket activation), `CCurl`
///   (libcurl's multi interface, dlopened on first use), `CEarlySignals` (the executable's
///   signal mask before main), `CEpoll` (epoll's header), `CProcessSecrecy` (no core dumps of
///   the daemon's memory, which holds keys), `CSealing` (AES-256-GCM from libcrypto: the store's
///   keys sealed at rest), `CVersion` (a package build's version).
/// - `Basics`: system errors, file reading, accounts, socket addresses, durations and text for
///   people. `JSON`: the strict reader and the writer.
/// - `EventLoop`: epoll, timers, the monotonic clock; knows nothing of sessions or HTTP.
/// - `Sessions`: the durable session store; knows nothing of the daemon.
/// - `Vocabulary`: the words the layers above share: HTTP origins, requests and results, run
///   ids and kinds, call outcomes, run reports and records.
/// - `Configuration`: the files, their keys, `check-config`, systemd credentials.
/// - `Journal`: journald entries, fields, the event registry, the non-blocking writer.
/// - `HTTPEngine`: libcurl on the event loop: pooling, multiplexing, per-origin planning.
/// - `Endpoints`: an endpoint's call for one session, and how its reply is judged.
/// - `Runs`: a run of end-session calls (stop, leftover, on-demand) inside its budget.
/// - `Control`: the control socket's protocol, server and client.
/// - `Systemd`: sd_notify, the watchdog, the service manager, socket activation, signals.
/// - `Metrics`: node_exporter's textfile: the figures, their text, the file's atomic replacement.
/// - `Daemon`: the composition root: the daemon's phases, its runs, requests, store and
///   state-directory documents.
/// - `session-cleanup`: the command line, one file per verb.
let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]

/// The fuzz targets (`Fuzz/Targets/NAME`, run by `scripts/fuzz.sh`): each is an executable
/// `fuzz-NAME` holding a libFuzzer entry point. Add a name here and its folder to add one.
let fuzzTargets = [
    "configuration", "control-request", "http-versions", "reply-judge", "store", "store-load", "token-reply",
]

/// A Swift target under `Sources/NAME` with the strict settings.
func library(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
    .target(name: name, dependencies: dependencies, swiftSettings: strict)
}

let package = Package(
    name: "session-cleanup",
    products: [
        .executable(name: "session-cleanup", targets: ["session-cleanup"])
    ],
    targets: [
        .target(
            name: "CSystemd",
            cSettings: [.unsafeFlags(["-Wall", "-Wextra"])],
            linkerSettings: [.linkedLibrary("systemd")]
        ),
        // A constructor that blocks the daemon's signals before main; only the executable links it.
        .target(
            name: "CEarlySignals",
            cSettings: [.unsafeFlags(["-Wall", "-Wextra"])]
        ),
        // The daemon kept out of core dumps (prctl, which Swift cannot call: it is variadic).
        .target(
            name: "CProcessSecrecy",
            cSettings: [.unsafeFlags(["-Wall", "-Wextra"])]
        ),
        .target(
            name: "CCurl",
            cSettings: [.unsafeFlags(["-Wall", "-Wextra"])],
            // No libcurl: the shim dlopens it on first use (see ccurl.h). dlopen is in libc
            // itself since glibc 2.34; link "dl" as well for an older glibc.
        ),
        // AES-256-GCM from libcrypto (OpenSSL): the store's session keys sealed at rest.
        .target(
            name: "CSealing",
            cSettings: [.unsafeFlags(["-Wall", "-Wextra"])],
            linkerSettings: [.linkedLibrary("crypto")]
        ),
        // The version a package build asks for (scripts/package.sh --version), else none.
        .target(
            name: "CVersion",
            cSettings: [.unsafeFlags(["-Wall", "-Wextra"])]
        ),
        // <sys/epoll.h>, which Swift's Glibc module leaves out; headers only.
        .systemLibrary(name: "CEpoll"),
        library("Basics", []),
        library("JSON", []),
        library("EventLoop", ["CEpoll", "Basics"]),
        library("Sessions", ["CSealing", "Basics"]),
        library("Vocabulary", ["CVersion", "Basics", "Sessions"]),
        library("Configuration", ["Basics", "Vocabulary"]),
        library("Journal", ["CSystemd", "Basics", "EventLoop", "Sessions", "Vocabulary"]),
        library("HTTPEngine", ["CCurl", "Basics", "EventLoop", "Vocabulary"]),
        library("Endpoints", ["Basics", "JSON", "Sessions", "Vocabulary", "Configuration"]),
        library(
            "Runs", ["Basics", "JSON", "EventLoop", "Sessions", "Vocabulary", "Configuration", "Journal", "Endpoints"]),
        library("Control", ["CSystemd", "Basics", "JSON", "EventLoop", "Sessions", "Vocabulary", "Journal"]),
        library("Systemd", ["CSystemd", "Basics", "EventLoop", "Journal"]),
        library("Metrics", ["Basics", "Vocabulary"]),
        library(
            "Daemon",
            [
                "CSystemd", "CProcessSecrecy", "Basics", "JSON", "EventLoop", "Sessions", "Vocabulary",
                "Configuration", "Journal", "HTTPEngine", "Runs", "Control", "Systemd", "Metrics",
            ]),
        .executableTarget(
            name: "session-cleanup",
            dependencies: [
                "CEarlySignals", "Basics", "JSON", "EventLoop", "Sessions", "Vocabulary", "Configuration", "Journal",
                "Control", "Systemd", "Daemon",
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "engine-bench",
            dependencies: ["EventLoop", "Vocabulary", "HTTPEngine"],
            path: "Benchmarks/engine-bench",
            swiftSettings: strict
        ),
        // The test doubles every test layer shares: an in-memory journal, a manual clock, a fake
        // HTTP transport.
        .target(
            name: "TestSupport",
            dependencies: ["EventLoop", "Vocabulary", "Journal"],
            path: "Tests/TestSupport",
            swiftSettings: strict
        ),
        .target(
            name: "FuzzSupport",
            dependencies: ["Basics", "Sessions"],
            path: "Fuzz/Support",
            swiftSettings: strict
        ),
        .testTarget(
            name: "UnitTests",
            dependencies: [
                "CCurl", "CProcessSecrecy", "Basics", "JSON", "EventLoop", "Sessions", "Vocabulary", "Configuration",
                "Journal", "HTTPEngine", "Endpoints", "Runs", "Control", "Systemd", "Metrics", "Daemon", "TestSupport",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "IntegrationTests",
            // CCurl: the shim's test hook (which reply buffers it freed, and whether wiped).
            dependencies: [
                "CCurl", "Basics", "JSON", "EventLoop", "Sessions", "Vocabulary", "Configuration", "Journal",
                "HTTPEngine", "Endpoints", "Runs", "Control", "Systemd", "Metrics", "Daemon", "TestSupport",
            ],
            swiftSettings: strict
        ),
    ]
)

package.targets += fuzzTargets.map { name in
    .executableTarget(
        name: "fuzz-\(name)",
        dependencies: [
            "FuzzSupport", "Basics", "JSON", "Sessions", "Vocabulary", "Configuration", "Endpoints", "Control",
            "Daemon",
        ],
        path: "Fuzz/Targets/\(name)",
        swiftSettings: strict
    )
}
