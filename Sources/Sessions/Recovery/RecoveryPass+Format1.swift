extension RecoveryPass {
    /// Format 1: frames carry the generation of the snapshot they follow; older ones are stale.
    /// The store is then rewritten in format 2.
    mutating func replayFormat1(_ raw: UnsafeRawBufferPointer, _ log: LogContents, snapshot: SnapshotContents?) {
        let generation = snapshot?.stamp
        var newer = 0
        for frame in log.frames {
            if let generation {
                if frame.stamp < generation {
                    state.report.staleLogFramesSkipped += 1
                    continue
                }
                if frame.stamp > generation { newer += 1 }
            }
            applyFrame(raw, frame)
            state.report.logFramesApplied += 1
        }
        if snapshot == nil, !log.frames.isEmpty {
            problem(
                .missingSnapshot, paths.snapshot,
                "snapshot missing but the log holds \(log.frames.count) committed frames; sessions from "
                    + "before the last compaction may be lost")
        }
        if newer > 0, let generation {
            problem(
                .missingCommits, paths.log,
                "\(newer) log frames are newer than snapshot generation \(generation) (the snapshot they "
                    + "followed is gone); applied them")
        }
        state.report.convertedFromFormat = 1
        state.plan.rewrite = true
    }
}
