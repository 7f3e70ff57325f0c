import Foundation
import Testing

@testable import HeraldDeviceKit

/// The decisions behind a flush, as plain values: what an answer means, how long to wait.
@Suite("Receipt answers and back-off as values")
struct DecisionTests {
    @Test("Each status of the receipt route means what its contract says")
    func answers() {
        #expect(ReceiptAnswer(HeraldResponse(status: 202), count: 3) == .taken(refused: []))
        #expect(ReceiptAnswer(HeraldResponse(status: 400), count: 3) == .refused(status: 400))
        #expect(ReceiptAnswer(HeraldResponse(status: 403), count: 3) == .refused(status: 403))
        #expect(ReceiptAnswer(HeraldResponse(status: 413), count: 3) == .tooLarge)
        #expect(ReceiptAnswer(HeraldResponse(status: 429, headers: ["retry-after": "7"]), count: 3) == .retry(retryAfter: .seconds(7)))
        #expect(ReceiptAnswer(HeraldResponse(status: 503, headers: ["Retry-After": " 30 "]), count: 3) == .retry(retryAfter: .seconds(30)))
        #expect(ReceiptAnswer(HeraldResponse(status: 503, headers: ["Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"]), count: 3)
            == .retry(retryAfter: nil))
        #expect(ReceiptAnswer(HeraldResponse(status: 503, headers: ["Retry-After": "-5"]), count: 3) == .retry(retryAfter: nil))
        let body = Data(#"{"taken":1,"refused":[{"index":0,"error":"x"},{"index":2,"error":"y"},{"index":-1,"error":"z"}]}"#.utf8)
        #expect(ReceiptAnswer(HeraldResponse(status: 202, body: body), count: 3) == .taken(refused: [0, 2]))
        #expect(ReceiptAnswer(HeraldResponse(status: 202, body: Data("not json".utf8)), count: 3) == .taken(refused: []))
    }

    @Test("The wait doubles from 1 s to 15 minutes; jitter shortens it by at most its fraction")
    func delays() {
        let retry = HeraldReceipts.Retry.standard
        let full = (1...12).map { retry.delay(afterAttempts: $0, retryAfter: nil, random: 0) }
        #expect(full == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900].map { Duration.seconds($0) })
        #expect(retry.delay(afterAttempts: 1, retryAfter: nil, random: 1) == .milliseconds(800))
        #expect(retry.delay(afterAttempts: Int.max, retryAfter: nil, random: 0) == .seconds(900))
        #expect(retry.delay(afterAttempts: 0, retryAfter: nil, random: 0) == .seconds(1))
    }

    @Test("Retry-After is waited out in full, up to the maximum, and never shortens the back-off")
    func retryAfter() {
        let retry = HeraldReceipts.Retry.standard
        #expect(retry.delay(afterAttempts: 1, retryAfter: .seconds(120), random: 1) == .seconds(120))
        #expect(retry.delay(afterAttempts: 1, retryAfter: .seconds(86_400), random: 0) == .seconds(900))
        #expect(retry.delay(afterAttempts: 6, retryAfter: .seconds(1), random: 0) == .seconds(32))
    }

    @Test("Foundation locale identifiers become BCP 47 tags")
    func locales() {
        #expect(HeraldDevice.bcp47("pt_BR") == "pt-BR")
        #expect(HeraldDevice.bcp47("sr_Latn_RS@calendar=gregorian") == "sr-Latn-RS")
        #expect(HeraldDevice.bcp47("en") == "en")
        #expect(HeraldDevice.bcp47("") == "und")
    }
}
