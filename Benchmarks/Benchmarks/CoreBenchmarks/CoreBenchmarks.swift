import Benchmark
import Foundation
import HeraldCore

// Payload encoding and JWT signing, the per-send work of issue 2. Foundation's JSONEncoder and
// JSONSerialization encode the same payload side by side, as the reference for ratios.

private struct CodableAlert: Encodable {
    var title: String
    var body: String
}

private struct CodableAPS: Encodable {
    var alert: CodableAlert
    var badge: Int
    var sound: String
    var threadID: String
    enum CodingKeys: String, CodingKey {
        case alert, badge, sound
        case threadID = "thread-id"
    }
}

private struct CodablePayload: Encodable {
    var aps: CodableAPS
    var orderID: Int
    var customer: String
}

private func heraldPayload() -> Payload {
    var payload = Payload(aps: APS(alert: .titled("Order shipped", body: "Your order #4242 is on its way and arrives Tuesday."), badge: 3, sound: .default, threadID: "orders"))
    try! payload.setCustom("orderID", 4242)
    try! payload.setCustom("customer", "c-19f2")
    return payload
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.throughput, .wallClock, .mallocCountTotal],
        maxDuration: .seconds(3),
        maxIterations: 1_000_000
    )

    Benchmark("Payload encode: Herald", configuration: .init(scalingFactor: .kilo)) { benchmark in
        let payload = heraldPayload()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try payload.encode())
        }
    }

    Benchmark("Payload encode: Foundation JSONEncoder (reference)", configuration: .init(scalingFactor: .kilo)) { benchmark in
        let payload = CodablePayload(
            aps: CodableAPS(alert: CodableAlert(title: "Order shipped", body: "Your order #4242 is on its way and arrives Tuesday."), badge: 3, sound: "default", threadID: "orders"),
            orderID: 4242, customer: "c-19f2"
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try encoder.encode(payload))
        }
    }

    Benchmark("Payload encode: Foundation JSONSerialization (reference)", configuration: .init(scalingFactor: .kilo)) { benchmark in
        let payload: [String: Any] = [
            "aps": ["alert": ["title": "Order shipped", "body": "Your order #4242 is on its way and arrives Tuesday."], "badge": 3, "sound": "default", "thread-id": "orders"],
            "orderID": 4242, "customer": "c-19f2",
        ]
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try JSONSerialization.data(withJSONObject: payload, options: .sortedKeys))
        }
    }

    Benchmark("Raw payload validate (pass-through)", configuration: .init(scalingFactor: .kilo)) { benchmark in
        let bytes = try heraldPayload().encode().bytes
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try EncodedPayload(validating: bytes))
        }
    }

    Benchmark("JWT sign (ES256, new token)") { benchmark in
        let key = ProviderKey.generate()
        let now = Date()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try ProviderToken(key: key, issuedAt: now))
        }
    }

    Benchmark("JWT cached (issuer.currentToken)", configuration: .init(scalingFactor: .kilo)) { benchmark in
        let issuer = ProviderTokenIssuer(key: ProviderKey.generate())
        _ = try issuer.currentToken()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try issuer.currentToken())
        }
    }
}
