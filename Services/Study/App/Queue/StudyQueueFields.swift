import Foundation

/// The rules of the queue's fields (docs/study-api.md); anything else is 501.
enum StudyQueueFields {
    static let maxStudies = 8
    static let maxStudyNameCharacters = 16
    static let maxCommentCharacters = 500
    /// The number of reputation categories a User keeps (one client sends 6, another 9).
    static let reputationCategories = 9

    /// `lat` and `long` in degrees.
    static func coordinate(_ form: StudyForm) throws(StudyRefusal) -> (lat: Double, long: Double) {
        func degrees(_ key: String, _ limit: Double) throws(StudyRefusal) -> Double {
            guard let value = Double(try form.string(key).trimmingCharacters(in: .whitespaces)), value.isFinite, abs(value) <= limit else {
                throw .badField
            }
            return value
        }
        return (try degrees("lat", 90), try degrees("long", 180))
    }

    static func isStudyName(_ name: String) -> Bool {
        (1...maxStudyNameCharacters).contains(name.count) && name.utf8.count <= 4 * maxStudyNameCharacters
            && !name.unicodeScalars.contains { $0.properties.generalCategory == .control || $0.properties.generalCategory == .format }
    }

    /// `studylist` (repeated): 1–8 names, trimmed, duplicates dropped; the app sends `anything`
    /// for "any study".
    static func studylist(_ form: StudyForm) throws(StudyRefusal) -> [String] {
        var names: [String] = []
        for value in form.strings("studylist") {
            let name = value.trimmingCharacters(in: .whitespacesAndNewlines)
            guard isStudyName(name) else { throw .badField }
            if !names.contains(name) { names.append(name) }
        }
        guard (1...maxStudies).contains(names.count) else { throw .badField }
        return names
    }

    /// A Firebase uid (1–128 characters without spaces).
    static func uid(_ value: String) throws(StudyRefusal) -> String {
        let uid = value.trimmingCharacters(in: .whitespaces)
        guard (1...128).contains(uid.utf8.count), !uid.contains(where: { $0.isWhitespace || $0.isNewline }) else { throw .badField }
        return uid
    }

    /// `reputation` (repeated 0/1 per category, 1–9 of them), padded to nine.
    static func reputation(_ form: StudyForm, key: String = "reputation") throws(StudyRefusal) -> [Int] {
        let values = form.strings(key)
        guard (1...reputationCategories).contains(values.count) else { throw .badField }
        var result: [Int] = []
        for value in values {
            guard let vote = Int(value.trimmingCharacters(in: .whitespaces)), (0...1).contains(vote) else { throw .badField }
            result.append(vote)
        }
        return result + Array(repeating: 0, count: reputationCategories - result.count)
    }

    /// `comment`: present, at most 500 characters (may be empty).
    static func comment(_ form: StudyForm) throws(StudyRefusal) -> String {
        let comment = try form.string("comment").trimmingCharacters(in: .whitespacesAndNewlines)
        guard comment.count <= maxCommentCharacters, comment.utf8.count <= 4 * maxCommentCharacters else { throw .badField }
        return comment
    }
}
