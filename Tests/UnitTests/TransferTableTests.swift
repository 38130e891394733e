import XCTest

@testable import SessionCleanup

final class TransferTableTests: XCTestCase {
    private final class Item {
        let name: String
        init(_ name: String) { self.name = name }
    }

    func testATagFindsItsElementUntilRemovedAndAReusedSlotGetsANewTag() throws {
        var table = TransferTable<Item>()
        let a = table.insert { _ in Item("a") }
        let b = table.insert { _ in Item("b") }
        XCTAssertEqual(table.count, 2)
        XCTAssertEqual(table[a]?.name, "a")
        XCTAssertEqual(table[b]?.name, "b")
        XCTAssertEqual(table.remove(a)?.name, "a")
        XCTAssertNil(table[a], "a removed tag finds nothing")
        XCTAssertNil(table.remove(a), "nor is it removed twice")
        let c = table.insert { _ in Item("c") }
        XCTAssertNotEqual(c, a, "the freed slot is taken under a tag never given before")
        XCTAssertNil(table[a], "the old tag does not find the slot's new element")
        XCTAssertEqual(table[c]?.name, "c")
        XCTAssertEqual(table.count, 2)
        XCTAssertNil(table[UInt64.max], "an unknown slot finds nothing")
    }

    func testTagsSortInTheOrderOfInsertionAndMakeGetsItsOwnTag() {
        var table = TransferTable<Item>()
        var tags: [UInt64] = []
        for n in 0..<50 { tags.append(table.insert { Item("\(n) \($0)") }) }
        for tag in tags where tag % 3 == 0 { _ = table.remove(tag) }
        for n in 50..<80 { tags.append(table.insert { Item("\(n) \($0)") }) }
        let left = tags.filter { table[$0] != nil }
        XCTAssertEqual(table.tags.sorted(), left, "sorted tags are in insertion order, slots reused or not")
        for tag in left { XCTAssertTrue(table[tag]?.name.hasSuffix(" \(tag)") == true) }
        XCTAssertEqual(table.count, left.count)
        XCTAssertTrue(table.contains { $0.name.hasPrefix("79 ") })
        XCTAssertFalse(table.contains { $0.name == "nobody" })
    }
}

final class DescriptorSetTests: XCTestCase {
    func testMembershipFollowsInsertAndRemoveAgainstAReferenceSet() {
        var set = DescriptorSet()
        var reference = Set<Int32>()
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            let fd = Int32.random(in: 0..<300, using: &rng)
            if Bool.random(using: &rng) {
                XCTAssertEqual(set.insert(fd), reference.insert(fd).inserted)
            } else {
                XCTAssertEqual(set.remove(fd), reference.remove(fd) != nil)
            }
            XCTAssertEqual(set.contains(fd), reference.contains(fd))
        }
        XCTAssertEqual(set.count, reference.count)
        XCTAssertEqual(set.members, reference.sorted())
        XCTAssertFalse(set.insert(-1), "never a negative descriptor")
        XCTAssertFalse(set.contains(-1))
        XCTAssertFalse(set.contains(10_000), "beyond the bitmap: not a member")
    }
}

final class HTTPRequestStorageTests: XCTestCase {
    func testACopyChangedLaterLeavesTheOriginalAsItWas() {
        let original = HTTPRequest(
            url: "http://h.example/u/k1", redactedURL: "http://h.example/u/<redacted>", headers: ["X-A: 1"])
        var changed = original
        changed.url = "http://h.example/u/k2"
        changed.headers.append("X-B: 2")
        changed.timeout = .seconds(3)
        XCTAssertEqual(original.url, "http://h.example/u/k1")
        XCTAssertEqual(original.headers, ["X-A: 1"])
        XCTAssertEqual(original.timeout, .seconds(20))
        XCTAssertEqual(changed.url, "http://h.example/u/k2")
        XCTAssertEqual(changed.headers, ["X-A: 1", "X-B: 2"])
        XCTAssertEqual(changed.timeout, .seconds(3))
        XCTAssertEqual(changed.redactedURL, original.redactedURL)
    }
}
