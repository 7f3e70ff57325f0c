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

    // Parsing: the gateway reads every POST /v1/apps/…/notifications body and every line of a
    // device import with JSONValue(parsing:). Foundation's parsers read the same bytes, as the
    // reference (issue 12 asks to parse with Foundation unless a measurement says otherwise).
    let requestBody = Array(
        #"{"to":{"users":["u-1842","u-77"]},"payload":{"aps":{"alert":{"title":"Order shipped","body":"Your order #4242 is on its way."},"badge":3,"sound":"default"},"orderID":4242},"pushType":"alert","priority":10,"collapseID":"order-4242","idempotencyKey":"3f1c9a2e-order-4242"}"#.utf8
    )
    let importLine = Array(#"{"token":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","user":"u-1842","tags":["beta","eu"],"badge":2}"#.utf8)

    for (name, bytes) in [("notification request", requestBody), ("device import line", importLine)] {
        Benchmark("JSON parse \(name): Herald JSONValue", configuration: .init(scalingFactor: .kilo)) { benchmark in
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(try JSONValue(parsing: bytes))
            }
        }

        Benchmark("JSON parse \(name): Foundation JSONSerialization (reference)", configuration: .init(scalingFactor: .kilo)) { benchmark in
            let data = Data(bytes)
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(try JSONSerialization.jsonObject(with: data))
            }
        }
    }

    Benchmark("JSON parse device import line: Foundation JSONDecoder (reference)", configuration: .init(scalingFactor: .kilo)) { benchmark in
        struct Line: Decodable {
            var token: String
            var user: String?
            var tags: [String]?
            var badge: Int?
        }
        let data = Data(importLine)
        let decoder = JSONDecoder()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try decoder.decode(Line.self, from: data))
        }
    }
}
