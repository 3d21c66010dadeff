// TEMPORARY until branch replay-changes lands ChatInternal.MessageChangePayload.
import ChatInternalAPI
import ClientContract
import Events
import Foundation

extension ChatInternal {
    struct MessageChangePayload: JSONWritable {
        var event: String
        init(edited: ChatEvents.MessageEdited) { event = "e" }
        init(deleted: ChatEvents.MessageDeleted) { event = "d" }
        func write(to json: inout JSONWriter) {
            json.beginObject()
            json.endObject()
        }
    }
}
