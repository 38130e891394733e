/// Rows of cells as aligned columns, two spaces apart; the first row is the header.
enum TextTable {
    /// The rows' lines, without trailing spaces (an empty last cell adds none).
    static func lines(_ rows: [[String]]) -> [String] {
        let columns = rows.map(\.count).max() ?? 0
        var widths = [Int](repeating: 0, count: columns)
        for row in rows {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        return rows.map { row in
            var line = ""
            for (column, cell) in row.enumerated() {
                line +=
                    column == row.count - 1
                    ? cell : cell + String(repeating: " ", count: widths[column] - cell.count + 2)
            }
            while line.last == " " { line.removeLast() }
            return line
        }
    }
}
