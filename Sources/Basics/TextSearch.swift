/// Finding, replacing and splitting at a piece of text, comparing UTF-8 bytes.
///
/// The standard library's `contains(_:)`, `firstRange(of:)`, `replacing(_:with:)` and
/// `split(separator:)` for a string argument live in `_StringProcessing`, which links the whole
/// regex engine (~0.8 MB of code) into the static binary for them. These compare bytes, not
/// `Character`s: a placeholder or a secret is found even where the text around it combines with
/// it into one grapheme (`"\r\n"` holds a `"\n"`), which is what a template or a scrubber needs.
extension StringProtocol {
    /// Whether `text` occurs in it (an empty `text` always does).
    package func containsText(_ text: some StringProtocol) -> Bool { rangeOfText(text) != nil }

    /// The first place where `text` occurs, or nil.
    package func rangeOfText(_ text: some StringProtocol) -> Range<Index>? {
        guard let offsets = TextSearch.firstOffsets(of: Array(text.utf8), in: Array(utf8), from: 0) else { return nil }
        let start = utf8.index(utf8.startIndex, offsetBy: offsets.lowerBound)
        return start..<utf8.index(start, offsetBy: offsets.count)
    }

    /// A copy with every occurrence of `text` (left to right, not overlapping) replaced by
    /// `replacement`.
    package func replacingText(_ text: some StringProtocol, with replacement: some StringProtocol) -> String {
        let haystack = Array(utf8)
        let needle = Array(text.utf8)
        guard !needle.isEmpty, var match = TextSearch.firstOffsets(of: needle, in: haystack, from: 0) else {
            return String(self)
        }
        var out: [UInt8] = []
        out.reserveCapacity(haystack.count)
        var copied = 0
        while true {
            out.append(contentsOf: haystack[copied..<match.lowerBound])
            out.append(contentsOf: replacement.utf8)
            copied = match.upperBound
            guard let next = TextSearch.firstOffsets(of: needle, in: haystack, from: copied) else { break }
            match = next
        }
        out.append(contentsOf: haystack[copied...])
        return String(decoding: out, as: UTF8.self)
    }

    /// The pieces before, between and after the occurrences of `separator`, empty ones kept
    /// (`"a{x}{x}b"` separated by `"{x}"`: `a`, ``, `b`); the whole text when it does not occur.
    package func pieces(separatedBy separator: some StringProtocol) -> [SubSequence] {
        let haystack = Array(utf8)
        let needle = Array(separator.utf8)
        var pieces: [SubSequence] = []
        var pieceStart = 0
        var from = 0
        while !needle.isEmpty, let match = TextSearch.firstOffsets(of: needle, in: haystack, from: from) {
            pieces.append(self[index(utf8Offset: pieceStart)..<index(utf8Offset: match.lowerBound)])
            pieceStart = match.upperBound
            from = match.upperBound
        }
        pieces.append(self[index(utf8Offset: pieceStart)...])
        return pieces
    }

    private func index(utf8Offset offset: Int) -> Index { utf8.index(utf8.startIndex, offsetBy: offset) }
}

private enum TextSearch {
    /// The byte offsets of `needle`'s first occurrence in `haystack` at or after `from`.
    static func firstOffsets(of needle: [UInt8], in haystack: [UInt8], from: Int) -> Range<Int>? {
        guard needle.count <= haystack.count - from else { return nil }
        guard let first = needle.first else { return from..<from }
        var start = from
        let lastStart = haystack.count - needle.count
        while start <= lastStart {
            if haystack[start] == first && haystack[start..<start + needle.count].elementsEqual(needle) {
                return start..<start + needle.count
            }
            start += 1
        }
        return nil
    }
}
