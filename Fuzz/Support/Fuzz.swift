import Basics
import Glibc

/// What every fuzz target in `Fuzz/Targets` shares: reading libFuzzer's input, checking
/// invariants, and replaying inputs when the target is built without libFuzzer.
///
/// A target is an executable with one entry point, `LLVMFuzzerTestOneInput`. `scripts/fuzz.sh`
/// builds it with `--sanitize fuzzer --sanitize address` and `-DFUZZING`, so libFuzzer supplies
/// `main`; the ordinary build (`swift build`) compiles it with a `main` that replays the files
/// named on its command line instead, so every target keeps compiling with the rest.
package enum Fuzz {
    /// The input libFuzzer hands a target, copied out of its buffer.
    package static func bytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
        guard let data, size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: size))
    }

    /// Stops the process when `condition` is false: libFuzzer keeps the input as a crash
    /// (`crash-…`) and `scripts/fuzz.sh` fails. `message` should say which invariant broke.
    package static func require(
        _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
        file: StaticString = #fileID, line: UInt = #line
    ) {
        guard !condition() else { return }
        let text = "fuzz invariant violated at \(file):\(line): \(message())\n"
        _ = text.utf8CString.withUnsafeBufferPointer { write(STDERR_FILENO, $0.baseAddress, $0.count - 1) }
        abort()
    }

    /// Splits `input` at each `separator` (a byte string the target's dictionary also holds),
    /// so one input can stand for several files or messages.
    package static func split(_ input: [UInt8], separator: [UInt8]) -> [[UInt8]] {
        guard !separator.isEmpty else { return [input] }
        var parts: [[UInt8]] = []
        var start = 0
        var index = 0
        while index + separator.count <= input.count {
            if input[index..<(index + separator.count)].elementsEqual(separator) {
                parts.append(Array(input[start..<index]))
                index += separator.count
                start = index
            } else {
                index += 1
            }
        }
        parts.append(Array(input[start...]))
        return parts
    }

    /// Whether `text` contains `needle` as bytes (no grapheme clustering: `"\r\n"` is two bytes).
    package static func contains(_ text: String, _ needle: String) -> Bool {
        occurrences(of: Array(needle.utf8), in: Array(text.utf8)) > 0
    }

    /// How often `needle` occurs in `bytes` (overlapping occurrences count).
    package static func occurrences(of needle: [UInt8], in bytes: [UInt8]) -> Int {
        guard !needle.isEmpty, bytes.count >= needle.count else { return 0 }
        var count = 0
        for start in 0...(bytes.count - needle.count)
        where bytes[start] == needle[0] && bytes[start..<(start + needle.count)].elementsEqual(needle) {
            count += 1
        }
        return count
    }

    /// The ordinary build's `main`: runs `body` on every file named in the arguments (a
    /// directory stands for the files in it), e.g. to replay a crash or a corpus under the
    /// debugger. Exits 0 when every input passed (a failed invariant aborts).
    package static func replay(_ body: ([UInt8]) -> Void) -> Never {
        var files: [String] = []
        for argument in CommandLine.arguments.dropFirst() {
            if let names = try? FileReading.directoryEntries(argument) {
                files += names.sorted().map { "\(argument)/\($0)" }
            } else {
                files.append(argument)
            }
        }
        if files.isEmpty {
            print(
                "usage: \(CommandLine.arguments.first ?? "fuzz-target") FILE|DIRECTORY…  (built without libFuzzer: replays inputs)"
            )
            exit(2)
        }
        for file in files {
            do {
                body(try FileReading.contents(of: file, limit: 16 << 20))
            } catch {
                print("\(file): \(error)")
                exit(1)
            }
        }
        print("\(files.count) inputs passed")
        exit(0)
    }
}
