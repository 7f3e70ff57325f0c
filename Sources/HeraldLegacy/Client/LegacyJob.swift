import HeraldCore
@_spi(HeraldFlow) import HeraldFlow

/// Where a notification's outcome goes: the caller of `send`, or a bulk send's sink.
enum LegacyJob: Sendable {
    case single(CheckedContinuation<Void, any Error>)
    case bulk(BulkSink<LegacyOutcome>, index: Int)
}

extension [LegacyStateMachine<LegacyJob>.Completion] {
    /// Hands every outcome to its job; a bulk send's outcomes go to its sink in one batch.
    func deliver() {
        var batch: [LegacyOutcome] = []
        var batchSink: BulkSink<LegacyOutcome>?
        for completion in self {
            switch completion.job {
            case .single(let continuation):
                switch completion.result {
                case .accepted: continuation.resume()
                case .rejected(let status): continuation.resume(throwing: LegacyError.rejected(status))
                case .failed(let error): continuation.resume(throwing: error)
                }
            case .bulk(let sink, let index):
                if let batchSink, batchSink !== sink {
                    batchSink.deliver(contentsOf: batch)
                    batch.removeAll(keepingCapacity: true)
                }
                batchSink = sink
                batch.append(LegacyOutcome(index: index, token: completion.token, result: completion.result, attempts: completion.attempts))
            }
        }
        if let batchSink, !batch.isEmpty { batchSink.deliver(contentsOf: batch) }
    }
}
