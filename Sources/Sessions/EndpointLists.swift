/// The distinct endpoint lists of a table's sessions, each with a number and the count of
/// sessions naming it: a session stores the number (4 bytes), and most sessions name one of a
/// few lists. A number is given back once no session names its list, and used again.
struct EndpointLists: Sendable {
    /// By number; empty for a number given back.
    private(set) var lists: [[String]] = []
    /// Sessions per number.
    private var counts: [Int] = []
    private var numbers: [[String]: UInt32] = [:]
    private var free: [UInt32] = []
    /// The number last handed out: sessions added in a row mostly name the same list, and
    /// comparing a list with its stored self costs nothing where hashing it costs a hash of
    /// every name.
    private var last: UInt32?

    init() {}

    subscript(number: UInt32) -> [String] { lists[Int(number)] }

    /// The number of `endpoints`, counting one more session naming it.
    mutating func retain(_ endpoints: [String]) -> UInt32 {
        if let last, lists[Int(last)] == endpoints {
            counts[Int(last)] += 1
            return last
        }
        let number: UInt32
        if let known = numbers[endpoints] {
            number = known
        } else if let reused = free.popLast() {
            number = reused
            lists[Int(number)] = endpoints
            numbers[endpoints] = number
        } else {
            precondition(lists.count < Int(UInt32.max), "at most 2^32 - 1 distinct endpoint lists")
            number = UInt32(lists.count)
            lists.append(endpoints)
            counts.append(0)
            numbers[endpoints] = number
        }
        counts[Int(number)] += 1
        last = number
        return number
    }

    /// One session fewer names list `number`.
    mutating func release(_ number: UInt32) {
        let i = Int(number)
        counts[i] -= 1
        guard counts[i] == 0 else { return }
        numbers[lists[i]] = nil
        lists[i] = []
        free.append(number)
        if last == number { last = nil }
    }

    /// Sessions per distinct list.
    var usage: [[String]: Int] {
        var all: [[String]: Int] = [:]
        for (list, number) in numbers { all[list] = counts[Int(number)] }
        return all
    }
}
