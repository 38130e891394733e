/// Hands out ``RunReport/CallResult/Shape``s so that results with the same endpoint, outcome and
/// requests made share one: a run's calls mostly end alike (`auth`, ended with 200 after one
/// request), so a run of 50,000 calls holds a few shapes rather than 50,000 copies of them.
///
/// Remembers the shapes used most recently (the last one first, compared before any other); a
/// shape not among them is made anew, so outcomes that all differ cost one shape each and
/// nothing more. Pure bookkeeping, no I/O.
package struct CallShapes {
    /// Shapes remembered at most.
    static let remembered = 8

    private var recent: [RunReport.CallResult.Shape] = []

    /// Remembers no shape yet.
    package init() {}

    /// The shape of `endpoint`, `outcome` and `attempts` requests.
    package mutating func shape(_ endpoint: String, _ outcome: CallOutcome, attempts: Int) -> RunReport.CallResult.Shape
    {
        let count = UInt32(clamping: attempts)
        // The last one first, without a loop: nearly every call of a stop run ends like the one before.
        if let last = recent.first, last.attempts == count, last.endpoint == endpoint, last.outcome == outcome {
            return last
        }
        for index in recent.indices.dropFirst()
        where recent[index].attempts == count && recent[index].endpoint == endpoint
            && recent[index].outcome == outcome
        {
            recent.swapAt(0, index)
            return recent[0]
        }
        let shape = RunReport.CallResult.Shape(endpoint, outcome, attempts: attempts)
        if recent.count == Self.remembered { recent.removeLast() }
        recent.insert(shape, at: 0)
        return shape
    }
}
