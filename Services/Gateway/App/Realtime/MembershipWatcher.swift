import Events
import Foundation
import Kafka
import Logging
import Messaging
import ServiceKit
import ServiceLifecycle

/// Follows `workspace.v1` (every partition from its end, no consumer group: each gateway needs
/// every event) so native sessions and credentialed Socket.IO namespaces stop receiving a
/// conversation as soon as their user may no longer read it: a channel left or deleted, a
/// workspace left or deleted (with its DM rooms). Chat's own checks cover everything else
/// (ready, subscribe, resume and namespace joins ask chat).
final class MembershipWatcher: Service, Sendable {
    private let hub: RealtimeHub
    private let configuration: KafkaConsumerConfiguration
    private let logger: Logger

    init(hub: RealtimeHub, client: KafkaClientConfiguration, fetchWaitMilliseconds: Int, logger: Logger) {
        self.hub = hub
        let partitions = (0..<Topic.workspace.partitions).map { TopicPartitionOffset(topic: Topic.workspace.name, partition: Int32($0), offset: .end) }
        var configuration = KafkaConsumerConfiguration(client: client, mode: .assignment(partitions))
        configuration.client.clientId = "\(client.clientId)-membership"
        configuration.fetchWaitMaxMilliseconds = fetchWaitMilliseconds
        configuration.announceForReadiness()  // the consumer is created when the service runs
        self.configuration = configuration
        self.logger = logger
    }

    func run() async throws {
        try await KafkaConsumer.consume(configuration, logger: logger) { self.apply($0) }
    }

    private func apply(_ message: KafkaConsumerMessage) {
        guard let value = message.value else { return }
        let type = message.cloudEventType
        switch type {
        case WorkspaceEvents.ChannelMemberLeft.eventType:
            guard let event = try? EventCoding.decode(WorkspaceEvents.ChannelMemberLeft.self, from: value).data else { return }
            revoke(user: event.userId, conversations: [event.channelId.uuid], roomsIn: nil)
        case WorkspaceEvents.MemberLeft.eventType:
            guard let event = try? EventCoding.decode(WorkspaceEvents.MemberLeft.self, from: value).data else { return }
            revoke(user: event.userId, conversations: event.channelIds.map(\.uuid), roomsIn: event.workspaceId.uuid)
        case WorkspaceEvents.ChannelDeleted.eventType:
            guard let event = try? EventCoding.decode(WorkspaceEvents.ChannelDeleted.self, from: value).data else { return }
            revoke(user: nil, conversations: [event.channelId.uuid], roomsIn: nil)
        case WorkspaceEvents.WorkspaceDeleted.eventType:
            guard let event = try? EventCoding.decode(WorkspaceEvents.WorkspaceDeleted.self, from: value).data else { return }
            revoke(user: nil, conversations: event.channelIds.map(\.uuid), roomsIn: event.workspaceId.uuid)
        default:
            return
        }
    }

    private func revoke(user: UserID?, conversations: [UUID], roomsIn workspace: UUID?) {
        hub.revoke(user: user, conversations: conversations, roomsIn: workspace)
    }
}
