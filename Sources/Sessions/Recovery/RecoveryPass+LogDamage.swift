extension RecoveryPass {
    /// Reports the log's damaged regions and how it ends (torn, cut), and plans their repair.
    mutating func reportDamage(_ log: LogContents) {
        for d in log.damage {
            problem(
                .corruptLogRecord, paths.log, offset: d.start, frame: d.frameNumber, bytes: d.end - d.start,
                "\(d.reason); skipped to the next intact frame at byte \(d.end)")
            state.plan.preserveLog = true
            state.plan.rewrite = true
        }
        switch log.end {
        case .clean:
            break
        case .torn(let range):
            problem(
                .truncatedLogTail, paths.log, offset: range.lowerBound, frame: log.frames.count + 1,
                bytes: range.count, "the last write was torn (never acknowledged); cleared it")
            state.plan.preserveLogBytes = range
            state.plan.clearLogBytes = range
            state.report.droppedTailBytes = range.count
        case .cut(let damaged):
            problem(
                .truncatedLog, paths.log, offset: damaged.lowerBound, bytes: damaged.count,
                "the log ends without its reserve of zero bytes after commit \(log.frames.last?.stamp ?? 0): "
                    + "it was cut, and commits after that point may be lost")
            if !damaged.isEmpty { state.plan.preserveLogBytes = damaged }
            state.plan.clearLogBytes = damaged
            state.plan.restoreReserve = true
            state.report.droppedTailBytes = damaged.count
        }
        if log.header == nil, !log.isFormat1 {
            // The header was damaged, or the log was cut before it ended (to nothing, say): a
            // log without one must not be appended to, since the next open would take the first
            // commit for the header and skip it. A fresh log gets a new header.
            if !log.frames.isEmpty || !log.damage.isEmpty {
                state.plan.rewrite = true
            } else {
                state.plan.freshLog = true
            }
        }
    }
}
