import Foundation

@testable import Configuration
@testable import Daemon
@testable import EventLoop
@testable import TestSupport

/// The daemon's run coordinator without the daemon around it: a real event loop, store (in
/// `scratch`/state) and configuration, journaling to memory. The test drives the loop.
struct CoordinatorFixture {
    let loop: EventLoop
    let journal = MemoryJournal()
    let committer: StoreCommitter
    let runs: RunCoordinator
    /// The state directory.
    let state: String

    init(scratch: ScratchDirectory, config text: String, name: String) throws {
        loop = try EventLoop()
        state = scratch.path + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        committer = try StoreCommitter(directory: state, loop: loop, journal: journal)
        let configuration = try ConfigurationLoader.load(files: [("\(name).conf", Array(text.utf8))])
        runs = RunCoordinator(
            loop: loop, journal: journal, committer: committer,
            configuration: ActiveConfiguration(configuration, files: []), credentialsDirectory: nil)
    }
}
