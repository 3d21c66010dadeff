import Events
import Foundation

/// One sample of every event type, with every optional field set, so the schema tests see each
/// field the encoder can write. `EventSchemaTests` fails when a type of `EventCatalog` has none.
enum EventSamples {
    static func all() -> [any EventPayload] {
        let now = Timestamp.truncated(Date())
        let user = UserID.generate()
        let other = UserID.generate()
        let workspace = WorkspaceID.generate()
        let channel = ChannelID.generate()
        let room = RoomID.generate()
        let message = MessageID.generate()
        let request = CoinRequestID.generate()
        let sender = ChatEvents.Sender(userId: user, email: "minji@example.com", nickname: "민지", profileImage: "/static/profiles/a.jpg")
        let dm = ChatEvents.Conversation.room(room, participants: [user, other].sorted())
        let payloads: [any EventPayload] = [
            AuthEvents.UserRegistered(
                userId: user, email: "minji@example.com", nickname: "민지", profileImage: "/static/profiles/a.jpg", provider: "email", createdAt: now),
            AuthEvents.UserProfileUpdated(userId: user, email: "minji@example.com", nickname: "민지2", profileImage: "/static/profiles/b.jpg"),
            AuthEvents.UserDeleted(userId: user),
            AuthEvents.DeviceTokenAdded(userId: user, token: "abcdef0123", addedAt: now),
            AuthEvents.DeviceTokensRemoved(userId: user, tokens: ["abcdef0123"], removedAt: now),
            AuthEvents.FriendshipChanged(userId: user, friendId: other, friendshipId: FriendshipID.generate(), state: .accepted),
            WorkspaceEvents.WorkspaceCreated(
                workspaceId: workspace, name: "팀", description: "우리 팀", coverImage: "/static/workspaces/c.png", ownerId: user,
                defaultChannelId: channel, createdAt: now),
            WorkspaceEvents.WorkspaceUpdated(workspaceId: workspace, name: "팀2", description: "설명", coverImage: "/static/workspaces/d.png"),
            WorkspaceEvents.WorkspaceDeleted(workspaceId: workspace, channelIds: [channel]),
            WorkspaceEvents.WorkspaceOwnerChanged(workspaceId: workspace, previousOwnerId: user, ownerId: other),
            WorkspaceEvents.MemberJoined(workspaceId: workspace, userId: other, channelIds: [channel], via: .inviteCode),
            WorkspaceEvents.MemberLeft(workspaceId: workspace, userId: other, channelIds: [channel]),
            WorkspaceEvents.ChannelCreated(
                workspaceId: workspace, channelId: channel, name: "일반", description: "잡담", ownerId: user, isDefault: true, createdAt: now),
            WorkspaceEvents.ChannelCreated(
                workspaceId: workspace, channelId: ChannelID.generate(), name: "스레드", description: "릴리스 논의", ownerId: user, isDefault: false, createdAt: now,
                alias: 7, parentId: channel),
            WorkspaceEvents.ChannelUpdated(
                workspaceId: workspace, channelId: channel, name: "일반2", description: "설명", coverImage: "/static/channels/e.png"),
            WorkspaceEvents.ChannelDeleted(workspaceId: workspace, channelId: channel),
            WorkspaceEvents.ChannelOwnerChanged(workspaceId: workspace, channelId: channel, previousOwnerId: user, ownerId: other),
            WorkspaceEvents.ChannelMemberJoined(workspaceId: workspace, channelId: channel, userId: other),
            WorkspaceEvents.ChannelMemberLeft(workspaceId: workspace, channelId: channel, userId: other),
            WorkspaceEvents.ChannelJoinRefused(workspaceId: workspace, channelId: channel, userId: other),
            WorkspaceEvents.CoinDebitRequested(requestId: request, workspaceId: workspace, userId: user, amount: 10, reason: "workspace-creation"),
            WorkspaceEvents.CoinRefundRequested(requestId: request, workspaceId: workspace, userId: user),
            ChatEvents.ChannelMessageCreated(
                messageId: message, workspaceId: workspace, channelId: channel, channelName: "일반", sender: sender, content: "안녕 <@\(other)>",
                files: ["/static/channelChats/f.png"], createdAt: now, parentId: MessageID.generate(), mentions: [other]),
            ChatEvents.DirectMessageCreated(
                messageId: message, workspaceId: workspace, roomId: room, participants: [user, other].sorted(), sender: sender, content: "hi",
                files: ["/static/dmChats/g.pdf"], createdAt: now, parentId: MessageID.generate(), mentions: [other]),
            ChatEvents.MessageEdited(
                messageId: message, workspaceId: workspace, conversation: .channel(channel), senderId: user, content: "edited", mentions: [other],
                editedAt: now),
            ChatEvents.MessageDeleted(messageId: message, workspaceId: workspace, conversation: dm, senderId: user, deletedAt: now),
            ChatEvents.ReactionsChanged(
                messageId: message, workspaceId: workspace, conversation: .channel(channel), userId: other, emoji: "👍", added: true,
                reactions: [ChatEvents.Reaction(emoji: "👍", count: 1, users: [other])]),
            ChatEvents.ReadCursorMoved(userId: user, workspaceId: workspace, conversation: dm, readAt: now),
            ChatEvents.ChannelJoinRequested(userId: other, workspaceId: workspace, channelId: channel),
            // A personal room: no workspace, an alias and a group name.
            ChatEvents.DirectMessageCreated(
                messageId: message, workspaceId: nil, roomId: room, participants: [user, other].sorted(), sender: sender, content: "모두 안녕",
                files: [], createdAt: now, roomAlias: 4_503_599_627_370_517, roomName: "준, 민지"),
            ChatEvents.ReadCursorMoved(
                userId: user, workspaceId: nil, conversation: .room(room, participants: [user, other].sorted(), alias: 42), readAt: now),
            ChatEvents.RoomChanged(
                roomId: room, alias: 42, change: .left, actorId: user, group: true, name: "준, 민지", icon: "/static/roomIcons/a.png", ownerId: other,
                members: [other], removed: [user]),
            GatewayEvents.SessionOpened(
                sessionId: "s1", gatewayId: "g1", userId: user, clientProtocol: .native, openedAt: now, gatewayInstance: "i1", device: "Minji's phone"),
            GatewayEvents.SessionClosed(sessionId: "s1", gatewayId: "g1", userId: user, closedAt: now),
            GatewayEvents.GatewayAlive(gatewayId: "g1", instanceId: "i1", startedAt: now, at: now, intervalMilliseconds: 5000),
            GatewayEvents.GatewayStopped(gatewayId: "g1", instanceId: "i1", at: now),
            GatewayEvents.InterestChanged(gatewayId: "g1", conversationId: channel.uuid, interested: true),
            GatewayEvents.SessionCheckpoint(
                sessionId: "s1", gatewayId: "g1", userId: user, openedAt: now, seq: 7, baseSeq: 5,
                conversations: [
                    GatewayEvents.ConversationCursor(
                        conversationId: channel.uuid, kind: .channel, createdAt: now, afterMessage: true, workspaceId: workspace.uuid)
                ],
                marks: [GatewayEvents.DispatchMark(seq: 6, conversationId: channel.uuid, createdAt: now, messageId: message)], checkpointedAt: now,
                attached: true, gatewayInstance: "i1"),
            GatewayEvents.TypingStarted(conversationId: channel.uuid, kind: .channel, userId: user, startedAt: now),
            GatewayEvents.TypingStarted(conversationId: channel.uuid, kind: .channel, userId: user, startedAt: now, name: "Ada"),
            GatewayEvents.CommunitySignal(communityId: workspace.uuid, userId: user, signal: "before-enter", at: now),
            PresenceEvents.StatusChanged(userId: user, status: .online, lastSeen: now, workspaceIds: [workspace]),
            PaymentEvents.CoinsCredited(billingId: UUID(), userId: user, amount: 100, balance: 100, version: 1),
            PaymentEvents.CoinsDebited(requestId: request, workspaceId: workspace, userId: user, amount: 10, balance: 90, version: 2),
            PaymentEvents.CoinDebitRejected(requestId: request, userId: user, amount: 1000, reason: .insufficientCoins, balance: 90, version: 2),
            PaymentEvents.CoinsRefunded(requestId: request, userId: user, amount: 10, balance: 100, version: 3),
            StudyEvents.RequestSent(fromUid: "Qm8c2TfPZsV1h9d0aE3kLr7xYw42", fromNick: "새싹", toUid: "Zr4n1KfP0sWq8yT6uJ2bLm5cXv91"),
            StudyEvents.Matched(
                acceptorUid: "Zr4n1KfP0sWq8yT6uJ2bLm5cXv91", acceptorNick: "다라", requesterUid: "Qm8c2TfPZsV1h9d0aE3kLr7xYw42", requesterNick: "새싹"),
            StudyEvents.Dodged(uid: "Zr4n1KfP0sWq8yT6uJ2bLm5cXv91", nick: "다라", partnerUid: "Qm8c2TfPZsV1h9d0aE3kLr7xYw42", dodgeNum: 1),
            StudyEvents.UserTokenChanged(uid: "Zr4n1KfP0sWq8yT6uJ2bLm5cXv91", fcmToken: "fcm-token-1", changedAt: now),
            StudyEvents.ChatSent(
                id: "6743a1f0c2b9e4d7a1f03b22", from: "Zr4n1KfP0sWq8yT6uJ2bLm5cXv91", fromNick: "다라", to: "Qm8c2TfPZsV1h9d0aE3kLr7xYw42", chat: "안녕하세요",
                createdAt: now),
        ]
        return payloads
    }

    /// The sample's whole CloudEvent as the suite writes it.
    static func encoded(_ payload: any EventPayload) throws -> [UInt8] {
        func encode<P: EventPayload>(_ p: P) throws -> [UInt8] { try EventCoding.encode(CloudEvent(source: "test", data: p)) }
        return try encode(payload)
    }
}
