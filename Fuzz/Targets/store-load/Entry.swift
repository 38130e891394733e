import FuzzSupport

/// libFuzzer's entry point: one input, one run.
@_cdecl("LLVMFuzzerTestOneInput")
package func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    StoreLoadFuzz.run(Fuzz.bytes(data, size))
    return 0
}

#if !FUZZING
    /// Built without libFuzzer: replays the files named on the command line, or with
    /// `--write-seeds DIRECTORY` writes the seed corpus (from stores the store itself writes).
    @main enum Replay {
        static func main() {
            if CommandLine.arguments.count == 3, CommandLine.arguments[1] == "--write-seeds" {
                Seeds.write(to: CommandLine.arguments[2])
            }
            Fuzz.replay(StoreLoadFuzz.run)
        }
    }
#endif
