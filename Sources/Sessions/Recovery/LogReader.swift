/// How a log ends after its last intact frame.
enum LogEnd: Equatable {
    /// Zero bytes to the end of the file: the reserve every log keeps (format 2), or nothing at
    /// all (format 1, which kept no reserve).
    case clean
    /// The last write was torn: damaged bytes, then the reserve's zeros. It was never
    /// acknowledged (acknowledgements follow fdatasync, which follows the whole write).
    case torn(Range<Int>)
    /// The file ends without its reserve: it was cut, at a frame boundary (`damaged` empty) or
    /// inside a frame, by something other than this store. Commits after the cut may be lost.
    case cut(damaged: Range<Int>)
}

/// What a log file holds, read without trusting any of it.
struct LogContents {
    /// The header, when the file starts with an intact header frame (format 2).
    var header: LogHeader?
    /// True when the file starts with an intact frame that is not a header: format 1.
    var isFormat1 = false
    /// The intact commit frames, in file order (the header frame excluded).
    var frames: [StoreFrame.Scanned] = []
    /// Damaged regions with intact frames after them.
    var damage: [StoreFrame.Damage] = []
    /// How the file ends.
    var end = LogEnd.clean
    /// Where the next commit would be written: the end of the last intact frame.
    var logicalEnd = 0
    /// A record type this version does not know: the file was written by a newer version.
    var unknownTag: (offset: Int, tag: UInt8)?
}

/// Reads a log (docs/store-format.md, "The log"): frames, damage, and how it ends.
enum LogReader {
    /// `formatHint` is the snapshot's format version, which decides how a log that does not
    /// start with an intact frame is read (nil: the current format).
    static func read(_ raw: UnsafeRawBufferPointer, formatHint: UInt32?) -> LogContents {
        var log = LogContents()
        let scan = StoreFrame.scan(raw)
        if let u = scan.unknownTag {
            log.unknownTag = u
            return log
        }
        var frames = scan.frames[...]
        if let first = frames.first, first.offset == 0 {
            if case .logHeader(let header) = StoreFrame.singleRecord(raw, first) {
                log.header = header
                frames = frames.dropFirst()
            } else {
                log.isFormat1 = true
            }
        }
        log.frames = Array(frames)
        log.logicalEnd = scan.goodEnd
        for d in scan.damage where !d.reachesEnd { log.damage.append(d) }
        let tail = scan.damage.last.flatMap { $0.reachesEnd ? $0.start..<$0.end : nil }
        let format1 = log.isFormat1 || (log.header == nil && formatHint == 1)
        log.end = classifyEnd(raw, tail: tail, reserveExpected: !format1)
        return log
    }

    /// Tells the reserve from a torn write and from a cut. The writer never writes into the last
    /// `logReserveMinimum` bytes, so a file whose last byte is not zero was cut.
    private static func classifyEnd(_ raw: UnsafeRawBufferPointer, tail: Range<Int>?, reserveExpected: Bool)
        -> LogEnd
    {
        let lastIsZero = raw.last == 0
        guard let tail else {
            // Ends exactly after an intact frame, or the file is empty (a log always has a header).
            return reserveExpected ? .cut(damaged: raw.count..<raw.count) : .clean
        }
        var firstNonZero = tail.lowerBound
        while firstNonZero < tail.upperBound && raw[firstNonZero] == 0 { firstNonZero += 1 }
        if firstNonZero == tail.upperBound {
            // All zero: the reserve — unless it starts where the header must be (the log was cut
            // or zeroed before its header ended; found by the store-load fuzzer).
            return tail.lowerBound == 0 && reserveExpected ? .cut(damaged: 0..<0) : .clean
        }
        if !lastIsZero && reserveExpected { return .cut(damaged: tail) }
        return .torn(tail)
    }
}
