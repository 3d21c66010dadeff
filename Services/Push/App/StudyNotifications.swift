import Database
import Events
import Foundation
import Metrics
import PostgresNIO

/// `study.v1` → the study app's notifications (client contract §3.2: request, accept, dodge,
/// chat), each to the recipient's latest FCM token, planned in the inbox transaction of its event
/// (so once, whatever the redeliveries). The study app has no notification settings; a user
/// without a token, or FCM switched off, gets none. The planner's providers and counters serve both.
extension NotificationPlanner {
    func registerStudy(into router: inout EventRouter) {
        router.on(StudyEvents.UserTokenChanged.self) { event, context in
            let e = event.data
            if let token = e.fcmToken {
                _ = try await context.connection.query(
                    """
                    INSERT INTO study_tokens (uid, token, changed_at) VALUES (\(e.uid), \(token), \(e.changedAt))
                    ON CONFLICT (uid) DO UPDATE SET token = EXCLUDED.token, changed_at = EXCLUDED.changed_at
                    WHERE study_tokens.changed_at <= EXCLUDED.changed_at
                    """, logger: context.logger)
            } else {
                _ = try await context.connection.query(
                    "DELETE FROM study_tokens WHERE uid = \(e.uid) AND changed_at <= \(e.changedAt)", logger: context.logger)
            }
        }
        router.on(StudyEvents.RequestSent.self) { event, context in
            try await planStudy(event.id, to: event.data.toUid, .studyRequest(event.data), at: event.time, context)
        }
        router.on(StudyEvents.Matched.self) { event, context in
            try await planStudy(event.id, to: event.data.requesterUid, .studyMatched(event.data), at: event.time, context)
        }
        router.on(StudyEvents.Dodged.self) { event, context in
            try await planStudy(event.id, to: event.data.partnerUid, .studyDodged(event.data), at: event.time, context)
        }
        router.on(StudyEvents.ChatSent.self) { event, context in
            try await planStudy(event.id, to: event.data.to, .studyChat(event.data), at: event.data.createdAt, context)
        }
    }

    /// One notification row (keyed by the event id and the token) for `uid`'s current token.
    private func planStudy(_ eventId: UUID, to uid: String, _ content: NotificationContent, at time: Date, _ context: EventContext) async throws {
        let c = context.connection
        var found: String?
        for try await token in try await c.query("SELECT token FROM study_tokens WHERE uid = \(uid)", logger: context.logger).decode(String.self) {
            found = token
        }
        guard let token = found else { return }
        let provider = PushProvider(token: token)
        guard providers.contains(provider) else {
            skippedNoProvider.increment()
            return
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let payload = String(decoding: try encoder.encode(content), as: UTF8.self)
        _ = try await c.query(
            """
            INSERT INTO notifications (message_id, token, study_uid, provider, payload, message_at)
            VALUES (\(eventId), \(token), \(uid), \(provider.rawValue), \(payload)::jsonb, \(time))
            ON CONFLICT DO NOTHING
            """, logger: context.logger)
        _ = try await c.query("SELECT pg_notify(\(Self.wakeChannel), '')", logger: context.logger)
        planned.increment()
    }
}
