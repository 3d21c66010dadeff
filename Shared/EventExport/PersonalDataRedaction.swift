import Events
import Foundation

/// Nulls the personal-data fields of an event (`EventPersonalData.fields`): the key stays, its
/// value becomes `null`, so a reader sees the field was withheld rather than absent. An event of a
/// type without personal data is returned unchanged.
public enum PersonalDataRedaction {
    /// `event` is a whole CloudEvent object; returns whether anything was nulled.
    @discardableResult
    public static func redact(_ event: inout [String: Any]) -> Bool {
        guard let type = event["type"] as? String, let paths = EventPersonalData.fields[type], var data = event["data"] as? [String: Any] else {
            return false
        }
        var changed = false
        for path in paths {
            changed = nullOut(path.split(separator: ".").map(String.init)[...], in: &data) || changed
        }
        event["data"] = data
        return changed
    }

    private static func nullOut(_ path: ArraySlice<String>, in object: inout [String: Any]) -> Bool {
        guard let key = path.first, let value = object[key], !(value is NSNull) else { return false }
        if path.count == 1 {
            object[key] = NSNull()
            return true
        }
        guard var nested = value as? [String: Any] else { return false }
        let changed = nullOut(path.dropFirst(), in: &nested)
        object[key] = nested
        return changed
    }
}
