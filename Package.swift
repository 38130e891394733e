// swift-tools-version:6.0
import PackageDescription

/// session-cleanup: a systemd daemon that ends registered remote sessions when it is stopped.
///
/// Layout: C shims (`CSystemd` over libsystemd and signals, `CCurl` over libcurl's multi
/// interface, which it dlopens on first use, `CEarlySignals`, the executable's signal mask
/// before main, `CEpoll`, epoll's header), the event loop `EventLoop` (epoll, timers, the
/// monotonic clock, the system-call error; it knows nothing of sessions or HTTP), the session
/// store `Sessions` (the sessions, their file format, recovery and commit policy; it knows
/// nothing of the daemon), the domain library `SessionCleanup` (no globals), and thin
/// executables. The build checks that every target imports only what it depends on
/// (`--explicit-target-dependency-import-check error`, in scripts/test.sh).
let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]

/// The fuzz targets (`Fuzz/Targets/NAME`, run by `scripts/fuzz.sh`): each is an executable
/// `fuzz-NAME` holding a libFuzzer entry point. Add a name here and its folder to add one.
let fuzzTargets = ["configuration", "control-request", "http-versions", "reply-judge", "store", "store-load"]

let package = Package(
    name: "session-cleanup",
    products: [
        .executable(name: "session-cleanup", targets: ["session-cleanup"]),
        .library(name: "SessionCleanup", targets: ["SessionCleanup"]),
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
        .target(
            name: "CCurl",
            cSettings: [.unsafeFlags(["-Wall", "-Wextra"])],
            // No libcurl: the shim dlopens it on first use (see ccurl.h). dlopen is in libc
            // itself since glibc 2.34; link "dl" as well for an older glibc.
        ),
        // <sys/epoll.h>, which Swift's Glibc module leaves out; headers only.
        .systemLibrary(name: "CEpoll"),
        .target(
            name: "EventLoop",
            dependencies: ["CEpoll"],
            swiftSettings: strict
        ),
        .target(
            name: "Sessions",
            swiftSettings: strict
        ),
        .target(
            name: "SessionCleanup",
            dependencies: ["CSystemd", "CCurl", "EventLoop", "Sessions"],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "session-cleanup",
            dependencies: ["SessionCleanup", "EventLoop", "Sessions", "CEarlySignals"],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "engine-bench",
            dependencies: ["SessionCleanup", "EventLoop"],
            path: "Benchmarks/engine-bench",
            swiftSettings: strict
        ),
        .target(
            name: "FuzzSupport",
            dependencies: ["SessionCleanup", "Sessions"],
            path: "Fuzz/Support",
            swiftSettings: strict
        ),
        .testTarget(
            name: "UnitTests",
            dependencies: ["SessionCleanup", "EventLoop", "Sessions"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "IntegrationTests",
            // CCurl: the shim's test hook (which reply buffers it freed, and whether wiped).
            dependencies: ["SessionCleanup", "EventLoop", "Sessions", "CCurl"],
            swiftSettings: strict
        ),
    ]
)

package.targets += fuzzTargets.map { name in
    .executableTarget(
        name: "fuzz-\(name)",
        dependencies: ["FuzzSupport", "SessionCleanup", "Sessions"],
        path: "Fuzz/Targets/\(name)",
        swiftSettings: strict
    )
}
