import ArgumentParser
import HeraldCore

/// Device tokens: positional, and/or one per line from a file or stdin.
struct TokenOptions: ParsableArguments {
    @Argument(help: ArgumentHelp("Device tokens (hex).", valueName: "TOKEN"))
    var tokens: [String] = []

    @Option(name: .customLong("tokens-file"), help: ArgumentHelp("A file of tokens, one per line ('-' for stdin); blank lines and # comments are skipped.", valueName: "FILE"))
    var tokensFile: String?

    /// Every token text in order, read lazily from the file, each with where it came from.
    func tokenTexts() throws -> AnySequence<(text: String, origin: String)> {
        let positional = tokens.enumerated().map { (text: $0.element, origin: "argument \($0.offset + 1)") }
        guard let tokensFile else { return AnySequence(positional) }
        let reader = try LineReader(path: tokensFile)
        let name = tokensFile == "-" ? "stdin" : tokensFile
        let fromFile = reader.enumerated().lazy.compactMap { (index, line) -> (text: String, origin: String)? in
            let text = line.trimmingWhitespace()
            if text.isEmpty || text.hasPrefix("#") { return nil }
            return (text, "\(name) line \(index + 1)")
        }
        return AnySequence(positional.lazy + fromFile)
    }
}

private func + <A: Sequence, B: Sequence>(lhs: A, rhs: B) -> AnySequence<A.Element> where A.Element == B.Element {
    AnySequence([AnySequence(lhs), AnySequence(rhs)].joined())
}
