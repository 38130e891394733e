import XCTest

@testable import Endpoints
@testable import EventLoop
@testable import Runs
@testable import TestSupport

/// Access tokens kept for their lifetime less a margin, shared by source, and dropped on a 401.
final class TokenCacheTests: XCTestCase {
    private let clock = ManualClock()
    private let source = TokenSource(url: "https://idp.example/token", clientID: "daemon", scope: "a", audience: nil)

    func testATokenIsUsedForItsLifetimeLessTheMarginAndThenNotAtAll() {
        let cache = TokenCache(clock: clock)
        cache.store(AccessToken(value: "t1", lifetime: .seconds(300)), for: source)
        clock.advance(.seconds(269))
        XCTAssertEqual(cache.token(for: source)?.token.value, "t1")
        clock.advance(.seconds(1))
        XCTAssertNil(cache.token(for: source), "300 s less the 30 s margin")
        XCTAssertEqual(cache.count, 0, "an expired token is dropped from memory")
    }

    func testTheMarginIsAtMostHalfAShortLifetimeAndAnUnknownLifetimeIsAssumed() {
        XCTAssertEqual(TokenCache.validity(of: .seconds(20)), .seconds(10))
        XCTAssertEqual(TokenCache.validity(of: .zero), .seconds(1), "the waiting calls can still use it")
        XCTAssertEqual(TokenCache.validity(of: nil), .seconds(270))
        XCTAssertEqual(TokenCache.validity(of: .seconds(3600)), .seconds(3570))
    }

    func testTokensAreKeptPerSourceScopeAndAudienceIncluded() {
        let cache = TokenCache(clock: clock)
        let other = TokenSource(url: source.url, clientID: source.clientID, scope: "b", audience: nil)
        let audience = TokenSource(url: source.url, clientID: source.clientID, scope: "a", audience: "x")
        cache.store(AccessToken(value: "t1", lifetime: nil), for: source)
        XCTAssertNil(cache.token(for: other))
        XCTAssertNil(cache.token(for: audience))
        XCTAssertEqual(
            cache.token(for: TokenSource(url: source.url, clientID: "daemon", scope: "a", audience: nil))?.token.value,
            "t1", "an equal source shares the token")
    }

    func testA401DiscardsOnlyTheTokenTheCallCarried() {
        let cache = TokenCache(clock: clock)
        let first = cache.store(AccessToken(value: "t1", lifetime: nil), for: source)
        let second = cache.store(AccessToken(value: "t2", lifetime: nil), for: source)
        cache.discard(source, generation: first)
        XCTAssertEqual(cache.token(for: source)?.token.value, "t2", "a newer token stays")
        cache.discard(source, generation: second)
        XCTAssertNil(cache.token(for: source))
    }

    func testATokenNeverShowsInItsDescription() {
        let token = AccessToken(value: "very-secret-token", lifetime: nil)
        XCTAssertFalse("\(token)".contains("very-secret"))
        XCTAssertFalse(String(reflecting: token).contains("very-secret"))
    }
}

extension TokenCacheTests {
    func testDumpingATokenShowsNoToken() {
        var text = ""
        dump(AccessToken(value: "very-secret-token", lifetime: .seconds(5)), to: &text)
        XCTAssertFalse(text.contains("very-secret"), text)
    }
}
