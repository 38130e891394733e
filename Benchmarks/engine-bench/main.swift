// engine-bench: drives HTTPEngine against a local server and prints wall time and CPU.
//
//   python3 Tests/Support/http_test_server.py &        # prints PORT n
//   swift build -c release --product engine-bench
//   /usr/bin/time -v .build/release/engine-bench http://127.0.0.1:n/delay/50 10000 256 [window|all [TIMEOUT_MS]]
//
// "window" keeps `concurrency` transfers in flight, starting one as each completes; "all"
// starts every transfer at once and lets the engine's per-host limit queue them.
import EventLoop
import Glibc
import HTTPEngine
import Vocabulary

let arguments = CommandLine.arguments
guard arguments.count >= 4, let total = Int(arguments[2]), let concurrency = Int(arguments[3]) else {
    print("usage: engine-bench URL REQUESTS CONCURRENCY [window|all [TIMEOUT_MS]]")
    exit(2)
}
let url = arguments[1]
let mode = arguments.count > 4 ? arguments[4] : "window"

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

do {
    let loop = try EventLoop()
    let engine = try HTTPEngine(loop: loop, limits: HTTPEngine.Limits(maxTransfers: concurrency))
    var started = 0
    var finished = 0
    var statuses: [String: Int] = [:]
    var reused = 0
    let timeoutMS = Int64(arguments.count > 5 ? arguments[5] : "") ?? 30_000
    let request = HTTPRequest(url: url, redactedURL: "bench", timeout: .milliseconds(timeoutMS))

    func startOne() throws {
        started += 1
        try engine.start(request) { result in
            finished += 1
            if result.reusedConnection { reused += 1 }
            let key = result.status.map { "HTTP \($0)" } ?? "\(result.failure?.kind.rawValue ?? "?")"
            statuses[key, default: 0] += 1
            if mode == "window", started < total { try? startOne() }
        }
    }

    let cpuBefore = cpuSeconds()
    let begin = loop.clock.now()
    for _ in 0..<(mode == "window" ? min(concurrency, total) : total) { try startOne() }
    while finished < total { try loop.runOnce() }
    let wall = loop.clock.now().duration(since: begin)
    let cpu = cpuSeconds() - cpuBefore
    print("mode=\(mode) requests=\(total) concurrency=\(concurrency)")
    print("wall=\(Double(wall.microseconds) / 1e6) s  engine cpu=\(cpu) s  loop wake-ups=\(loop.wakeUps)")
    print("results=\(statuses.sorted { $0.key < $1.key }) reused connections=\(reused)")
    print("idle after: descriptors=\(engine.watchedDescriptorCount) timer=\(engine.hasScheduledTimer)")
} catch {
    print("engine-bench: \(error)")
    exit(1)
}
