import XCTest

@testable import HTTPEngine
@testable import Vocabulary

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

final class SocketStatesTests: XCTestCase {
    func testRegisteredCountFollowsEveryChangeAgainstAReferenceDictionary() {
        var states = SocketStates()
        var reference: [Int32: SocketStates.State] = [:]
        var rng = SystemRandomNumberGenerator()
        let choices: [SocketStates.State] = [
            [], [.connection], [.connection, .registered, .readable], [.registered, .wanted, .readable, .writable],
            [.connection, .registered, .wanted, .writable],
        ]
        for _ in 0..<5_000 {
            let fd = Int32.random(in: 0..<300, using: &rng)
            let state = choices.randomElement(using: &rng) ?? []
            states[fd] = state
            reference[fd] = state
            XCTAssertEqual(states[fd], state)
        }
        let registered = reference.filter { $0.value.contains(.registered) }.keys.sorted()
        XCTAssertEqual(states.registeredCount, registered.count)
        XCTAssertEqual(states.registered, registered)
        XCTAssertEqual(states.parked, reference.filter { $0.value.isParked }.keys.sorted())
        XCTAssertEqual(states[-1], [], "a negative descriptor has no state")
        states[-1] = [.registered]
        XCTAssertEqual(states.registeredCount, registered.count, "and gets none")
        XCTAssertEqual(states[10_000], [], "a descriptor never seen has none")
    }

    func testParkedMeansRegisteredButNotWanted() {
        XCTAssertTrue(SocketStates.State([.connection, .registered, .readable]).isParked)
        XCTAssertFalse(SocketStates.State([.connection, .registered, .wanted]).isParked)
        XCTAssertFalse(SocketStates.State([.connection]).isParked)
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
