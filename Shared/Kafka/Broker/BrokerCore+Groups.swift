import Logging
import NIOCore

/// A consumer group as the coordinator keeps it (Kafka's classic protocol): members join, the
/// leader's assignment is handed out at sync, heartbeats tell members to rejoin.
final class ConsumerGroup {
    enum State { case empty, preparingRebalance, completingRebalance, stable }

    final class Member {
        let id: String
        var sessionTimeoutMilliseconds: Int64
        var rebalanceTimeoutMilliseconds: Int64
        var protocols: [(name: String, metadata: ByteBuffer)]
        var lastSeen: NIODeadline
        var pendingJoin: (header: RequestHeader, connection: any BrokerConnection)?
        var pendingSync: (header: RequestHeader, connection: any BrokerConnection)?
        var assignment: ByteBuffer?

        init(id: String, session: Int64, rebalance: Int64, protocols: [(name: String, metadata: ByteBuffer)]) {
            self.id = id
            self.sessionTimeoutMilliseconds = session
            self.rebalanceTimeoutMilliseconds = rebalance
            self.protocols = protocols
            self.lastSeen = .now()
        }
    }

    let id: String
    var state = State.empty
    var generation: Int32 = 0
    /// In join order: the first one leads when the leader is gone.
    var members: [Member] = []
    var leaderId: String?
    var protocolType: String?
    var protocolName: String?
    var offsets: [TopicPartitionKey: (offset: Int64, metadata: String?)] = [:]
    var rebalanceTimer: Scheduled<Void>?
    var nextMember = 0

    init(id: String) { self.id = id }

    func member(_ id: String) -> Member? { members.first { $0.id == id } }
}

extension BrokerCore {
    // MARK: JoinGroup

    func joinGroup(_ header: RequestHeader, _ reader: inout KafkaReader, connection: any BrokerConnection) throws -> BrokerReply {
        let groupId = try reader.string()
        let session = try reader.int32()
        let rebalance = header.version >= 1 ? try reader.int32() : session
        let memberId = try reader.string()
        let protocolType = try reader.string()
        let protocols = try reader.array { r in (name: try r.string(), metadata: try r.nullableBytes() ?? ByteBuffer()) } ?? []
        func refuse(_ code: KafkaErrorCode) -> BrokerReply {
            .now(joinResponse(header, error: code, generation: -1, protocolName: "", leader: "", memberId: memberId, members: []))
        }
        guard !groupId.isEmpty else { return refuse(.invalidGroupId) }
        guard session >= 1, session <= 3_600_000, rebalance >= 1, rebalance <= 3_600_000 else { return refuse(.invalidSessionTimeout) }
        let group = groups[groupId] ?? ConsumerGroup(id: groupId)
        groups[groupId] = group
        guard !protocols.isEmpty, group.members.isEmpty || group.protocolType == protocolType else { return refuse(.inconsistentGroupProtocol) }
        let member: ConsumerGroup.Member
        if memberId.isEmpty {
            group.nextMember += 1
            member = ConsumerGroup.Member(
                id: "\(header.clientId ?? "member")-\(group.nextMember)", session: Int64(session), rebalance: Int64(rebalance), protocols: protocols)
            group.members.append(member)
        } else if let existing = group.member(memberId) {
            member = existing
            member.protocols = protocols
            member.sessionTimeoutMilliseconds = Int64(session)
            member.rebalanceTimeoutMilliseconds = Int64(rebalance)
        } else {
            return refuse(.unknownMemberId)
        }
        group.protocolType = protocolType
        member.lastSeen = .now()
        if let old = member.pendingJoin, !old.connection.isClosed {
            old.connection.complete(
                correlationId: old.header.correlationId,
                body: joinResponse(old.header, error: .rebalanceInProgress, generation: -1, protocolName: "", leader: "", memberId: member.id, members: []))
        }
        member.pendingJoin = (header, connection)
        if group.state != .preparingRebalance { prepareRebalance(group) }
        completeJoinIfReady(group)
        return .later
    }

    private func joinResponse(
        _ header: RequestHeader, error: KafkaErrorCode, generation: Int32, protocolName: String, leader: String, memberId: String,
        members: [(String, ByteBuffer)]
    ) -> ByteBuffer {
        var out = newBody()
        if header.version >= 2 { out.writeKafka(Int32(0)) }
        out.writeKafka(error.rawValue)
        out.writeKafka(generation)
        out.writeKafkaString(protocolName)
        out.writeKafkaString(leader)
        out.writeKafkaString(memberId)
        out.writeKafkaArray(members) { out, m in
            out.writeKafkaString(m.0)
            out.writeKafkaBytes(m.1)
        }
        return out
    }

    /// Starts a rebalance: members learn of it at their next heartbeat and rejoin; those that
    /// have not rejoined within the rebalance timeout are dropped.
    func prepareRebalance(_ group: ConsumerGroup) {
        if group.state == .completingRebalance {
            for member in group.members { answerSync(member, error: .rebalanceInProgress) }
        }
        group.state = .preparingRebalance
        group.rebalanceTimer?.cancel()
        let timeout = group.members.map(\.rebalanceTimeoutMilliseconds).max() ?? 0
        group.rebalanceTimer = eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(timeout)) { [self] in
            group.rebalanceTimer = nil
            guard group.state == .preparingRebalance else { return }
            group.members.removeAll { $0.pendingJoin == nil }
            self.completeJoinIfReady(group)
        }
    }

    func completeJoinIfReady(_ group: ConsumerGroup) {
        guard group.state == .preparingRebalance, group.members.allSatisfy({ $0.pendingJoin != nil }) else { return }
        group.rebalanceTimer?.cancel()
        group.rebalanceTimer = nil
        guard let first = group.members.first else {
            group.state = .empty
            group.leaderId = nil
            return
        }
        let leader = group.leaderId.flatMap { group.member($0) } ?? first
        let chosen = leader.protocols.first { candidate in
            group.members.allSatisfy { m in m.protocols.contains { $0.name == candidate.name } }
        }?.name
        guard let chosen else {
            // No assignor every member knows: the newest joiner cannot be in this group.
            if let newest = group.members.last, let join = newest.pendingJoin {
                group.members.removeLast()
                join.connection.complete(
                    correlationId: join.header.correlationId,
                    body: joinResponse(
                        join.header, error: .inconsistentGroupProtocol, generation: -1, protocolName: "", leader: "", memberId: newest.id, members: []))
            }
            completeJoinIfReady(group)
            return
        }
        group.generation += 1
        group.state = .completingRebalance
        group.leaderId = leader.id
        group.protocolName = chosen
        let metadata: [(String, ByteBuffer)] = group.members.map { m in (m.id, m.protocols.first { $0.name == chosen }?.metadata ?? ByteBuffer()) }
        for member in group.members {
            member.assignment = nil
            guard let join = member.pendingJoin else { continue }
            member.pendingJoin = nil
            member.lastSeen = .now()
            guard !join.connection.isClosed else { continue }
            join.connection.complete(
                correlationId: join.header.correlationId,
                body: joinResponse(
                    join.header, error: .none, generation: group.generation, protocolName: chosen, leader: leader.id, memberId: member.id,
                    members: member.id == leader.id ? metadata : []))
        }
    }

    // MARK: SyncGroup

    func syncGroup(_ header: RequestHeader, _ reader: inout KafkaReader, connection: any BrokerConnection) throws -> BrokerReply {
        let groupId = try reader.string()
        let generation = try reader.int32()
        let memberId = try reader.string()
        let assignments = try reader.array { r in (try r.string(), try r.nullableBytes() ?? ByteBuffer()) } ?? []
        guard let group = groups[groupId], let member = group.member(memberId) else { return .now(syncResponse(header, .unknownMemberId, nil)) }
        member.lastSeen = .now()
        guard generation == group.generation else { return .now(syncResponse(header, .illegalGeneration, nil)) }
        switch group.state {
        case .empty, .preparingRebalance:
            return .now(syncResponse(header, .rebalanceInProgress, nil))
        case .stable:
            return .now(syncResponse(header, .none, member.assignment))
        case .completingRebalance:
            member.pendingSync = (header, connection)
            if member.id == group.leaderId {
                for m in group.members { m.assignment = assignments.first { $0.0 == m.id }?.1 ?? ByteBuffer() }
                group.state = .stable
                for m in group.members { answerSync(m, error: .none) }
            }
            return .later
        }
    }

    private func answerSync(_ member: ConsumerGroup.Member, error: KafkaErrorCode) {
        guard let sync = member.pendingSync else { return }
        member.pendingSync = nil
        guard !sync.connection.isClosed else { return }
        sync.connection.complete(correlationId: sync.header.correlationId, body: syncResponse(sync.header, error, error == .none ? member.assignment : nil))
    }

    private func syncResponse(_ header: RequestHeader, _ error: KafkaErrorCode, _ assignment: ByteBuffer?) -> ByteBuffer {
        var out = newBody()
        if header.version >= 1 { out.writeKafka(Int32(0)) }
        out.writeKafka(error.rawValue)
        out.writeKafkaBytes(assignment ?? ByteBuffer())
        return out
    }

    // MARK: Heartbeat, LeaveGroup, session expiry

    func heartbeat(_ header: RequestHeader, _ reader: inout KafkaReader) throws -> ByteBuffer {
        let groupId = try reader.string()
        let generation = try reader.int32()
        let memberId = try reader.string()
        let error: KafkaErrorCode
        if let group = groups[groupId], let member = group.member(memberId) {
            member.lastSeen = .now()
            if group.state == .preparingRebalance {
                error = .rebalanceInProgress
            } else if generation != group.generation {
                error = .illegalGeneration
            } else {
                error = .none
            }
        } else {
            error = .unknownMemberId
        }
        return throttleAndError(header, error)
    }

    func leaveGroup(_ header: RequestHeader, _ reader: inout KafkaReader) throws -> ByteBuffer {
        let groupId = try reader.string()
        let memberId = try reader.string()
        guard let group = groups[groupId], let member = group.member(memberId) else { return throttleAndError(header, .unknownMemberId) }
        remove(member, from: group)
        return throttleAndError(header, .none)
    }

    private func throttleAndError(_ header: RequestHeader, _ error: KafkaErrorCode) -> ByteBuffer {
        var out = newBody()
        if header.version >= 1 { out.writeKafka(Int32(0)) }
        out.writeKafka(error.rawValue)
        return out
    }

    func remove(_ member: ConsumerGroup.Member, from group: ConsumerGroup) {
        group.members.removeAll { $0 === member }
        if group.leaderId == member.id { group.leaderId = nil }
        switch group.state {
        case .preparingRebalance:
            completeJoinIfReady(group)
        case .stable, .completingRebalance:
            if group.members.isEmpty {
                group.state = .empty
            } else {
                prepareRebalance(group)
            }
        case .empty:
            break
        }
    }

    /// Drops members whose session ran out (no heartbeat, join or sync within its timeout).
    func expireSessions() {
        let now = NIODeadline.now()
        for group in groups.values {
            let expired = group.members.filter { m in
                m.pendingJoin == nil && m.pendingSync == nil && now - m.lastSeen > .milliseconds(m.sessionTimeoutMilliseconds)
            }
            for member in expired {
                logger.debug("consumer group member expired", metadata: ["group": "\(group.id)", "member": "\(member.id)"])
                remove(member, from: group)
            }
        }
    }

    // MARK: OffsetCommit, OffsetFetch

    func offsetCommit(_ header: RequestHeader, _ reader: inout KafkaReader) throws -> ByteBuffer {
        let groupId = try reader.string()
        let generation = try reader.int32()
        let memberId = try reader.string()
        _ = try reader.int64()  // retention time
        let topics = try reader.array { r -> (String, [(Int32, Int64, String?)]) in
            let name = try r.string()
            return (name, try r.array { r in (try r.int32(), try r.int64(), try r.nullableString()) } ?? [])
        }
        var error = KafkaErrorCode.none
        let group = groups[groupId] ?? ConsumerGroup(id: groupId)
        func code(_ metadata: String?) -> KafkaErrorCode {
            error == .none && (metadata?.utf8.count ?? 0) > Self.maxOffsetMetadataBytes ? .offsetMetadataTooLarge : error
        }
        if groupId.isEmpty {
            error = .invalidGroupId
        } else if generation >= 0 || !memberId.isEmpty {
            // A member's commit: only for the group's current generation.
            if let member = group.member(memberId) {
                member.lastSeen = .now()
                if generation != group.generation {
                    error = .illegalGeneration
                } else if group.state == .completingRebalance {
                    error = .rebalanceInProgress
                }
            } else {
                error = .unknownMemberId
            }
        }
        if error == .none {
            groups[groupId] = group
            for (topic, partitions) in topics ?? [] {
                for (index, offset, metadata) in partitions where code(metadata) == .none {
                    group.offsets[TopicPartitionKey(topic: topic, partition: index)] = (offset, metadata)
                }
            }
        }
        var out = newBody()
        if header.version >= 3 { out.writeKafka(Int32(0)) }
        out.writeKafkaArray(topics ?? []) { out, topic in
            out.writeKafkaString(topic.0)
            out.writeKafkaArray(topic.1) { out, p in
                out.writeKafka(p.0)
                out.writeKafka(code(p.2).rawValue)
            }
        }
        return out
    }

    func offsetFetch(_ header: RequestHeader, _ reader: inout KafkaReader) throws -> ByteBuffer {
        let groupId = try reader.string()
        let requested = try reader.array { r in (try r.string(), try r.array { r in try r.int32() } ?? []) }
        let group = groups[groupId]
        let topics: [(String, [Int32])]
        if let requested {
            // As Kafka, which answers from a map: a partition asked for twice is answered once
            // (each answer can carry 4 KiB of metadata for the 4 bytes that asked for it).
            var seen = Set<TopicPartitionKey>()
            topics = requested.map { name, partitions in (name, partitions.filter { seen.insert(TopicPartitionKey(topic: name, partition: $0)).inserted }) }
        } else {
            // v2+: null asks for every committed offset of the group.
            let keys = group?.offsets.keys.sorted { ($0.topic, $0.partition) < ($1.topic, $1.partition) } ?? []
            topics = Dictionary(grouping: keys, by: \.topic).map { ($0.key, $0.value.map(\.partition)) }.sorted { $0.0 < $1.0 }
        }
        var out = newBody()
        if header.version >= 3 { out.writeKafka(Int32(0)) }
        out.writeKafkaArray(topics) { out, topic in
            out.writeKafkaString(topic.0)
            out.writeKafkaArray(topic.1) { out, index in
                let committed = group?.offsets[TopicPartitionKey(topic: topic.0, partition: index)]
                out.writeKafka(index)
                out.writeKafka(committed?.offset ?? -1)
                out.writeKafkaString(committed?.metadata ?? "")
                out.writeKafka(KafkaErrorCode.none.rawValue)
            }
        }
        if header.version >= 2 { out.writeKafka(KafkaErrorCode.none.rawValue) }
        return out
    }
}
