/// Why a template could not become a message for one language: a variable without a value, a
/// value a text cannot hold, a `navigate` that is not an https URL after rendering, or a
/// notification payload that is not a JSON object. The message names the variable and the field
/// (`variants.de.body`).
struct TemplateError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable code for the kind of problem.
    struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        var description: String { name }
        /// A variable used without a `default` filter has no value (absent or null).
        static let missingVariable = Code(name: "missingVariable")
        /// A variable's value a text cannot hold: an object, or an array holding one or null.
        static let invalidValue = Code(name: "invalidValue")
        /// A variant's `navigate` is not an https:// URL once rendered.
        static let invalidURL = Code(name: "invalidURL")
        /// The notification's own payload, which the template fills in, is not a JSON object.
        static let invalidPayload = Code(name: "invalidPayload")
    }

    var code: Code
    var message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    var description: String { message }
}
