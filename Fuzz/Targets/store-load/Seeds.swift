import FuzzSupport
import Glibc

/// The seed corpus (`Fuzz/Corpus/store-load`), written by `fuzz-store-load --write-seeds DIR`
/// from ``BaseStores``: each base store raw (its snapshot and log as the store wrote them, and
/// the log alone), and each base store damaged a few typical ways.
enum Seeds {
    static func write(to directory: String) -> Never {
        var seeds: [(String, [UInt8])] = []
        for (index, base) in BaseStores.all.enumerated() {
            seeds.append(("raw-\(base.name)", [0] + base.snapshot + StoreLoadFuzz.separator + base.log))
            seeds.append(("raw-\(base.name)-log-only", [0] + StoreLoadFuzz.separator + base.log))
            let b = UInt8(index)
            let middle = { (size: Int) in [UInt8((size / 2) & 0xFF), UInt8((size / 2) >> 8)] }
            seeds.append(("damaged-\(base.name)-none", [1, b]))
            // A byte changed in the middle of the snapshot, then of the log.
            seeds.append(("damaged-\(base.name)-snapshot-flip", [1, b, 4] + middle(base.snapshot.count) + [0x10]))
            seeds.append(("damaged-\(base.name)-log-flip", [1, b, 5] + middle(base.log.count) + [0x01]))
            // The log cut in its middle; the snapshot lost.
            seeds.append(("damaged-\(base.name)-log-cut", [1, b, 1] + middle(base.log.count)))
            seeds.append(("damaged-\(base.name)-snapshot-lost", [1, b, 2]))
        }
        for (name, bytes) in seeds {
            let fd = open("\(directory)/\(name)", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0, bytes.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
                print("writing \(directory)/\(name) failed: errno \(errno)")
                exit(1)
            }
            close(fd)
        }
        print("\(seeds.count) seeds written to \(directory)")
        exit(0)
    }
}
