/// Turns a transfer's byte counts into progress reports: to the handler at every chunk (it
/// may pace the transfer), as events at most once per percent and at the end.
actor ProgressReporter {
    private var current: TransferProgress
    private var lastEmittedPercent = -1
    private let emit: @Sendable (TransferProgress) async -> Void
    private let handler: (@Sendable (TransferProgress) async -> Void)?

    init(
        template: TransferProgress, emit: @escaping @Sendable (TransferProgress) async -> Void,
        handler: (@Sendable (TransferProgress) async -> Void)?
    ) {
        current = template
        self.emit = emit
        self.handler = handler
    }

    /// A new attempt starts from zero.
    func restart() {
        current.completedBytes = 0
        lastEmittedPercent = -1
    }

    func report(_ completed: Int64, total: Int64?? = nil) async {
        current.completedBytes = completed
        if let total { current.totalBytes = total }
        let percent = current.fraction.map { Int($0 * 100) } ?? Int(completed >> 20)
        if percent != lastEmittedPercent || current.isComplete {
            lastEmittedPercent = percent
            await emit(current)
        }
        await handler?(current)
    }
}
