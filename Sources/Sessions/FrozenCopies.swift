/// The token every frozen copy of a ``SessionTable`` holds (see `SessionTable.copies`).
final class FrozenCopies: Sendable {}
