import FuzzSupport

/// libFuzzer's entry point: one input, one run.
@_cdecl("LLVMFuzzerTestOneInput")
package func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    TokenReplyFuzz.run(Fuzz.bytes(data, size))
    return 0
}

#if !FUZZING
    /// Built without libFuzzer: replays the files named on the command line.
    @main enum Replay {
        static func main() { Fuzz.replay(TokenReplyFuzz.run) }
    }
#endif
