/// Every event type of the suite, once: the list the schema tests, the analytics export and the
/// gateway's schema route are checked against (EventsTests fails when a type is missing here,
/// from docs/asyncapi.yaml or from docs/schemas).
public enum EventCatalog {
    public static let payloadTypes: [any EventPayload.Type] = [
        AuthEvents.UserRegistered.self, AuthEvents.UserProfileUpdated.self, AuthEvents.UserDeleted.self,
        AuthEvents.DeviceTokenAdded.self, AuthEvents.DeviceTokensRemoved.self, AuthEvents.FriendshipChanged.self,
        WorkspaceEvents.WorkspaceCreated.self, WorkspaceEvents.WorkspaceUpdated.self, WorkspaceEvents.WorkspaceDeleted.self,
        WorkspaceEvents.WorkspaceOwnerChanged.self, WorkspaceEvents.MemberJoined.self, WorkspaceEvents.MemberLeft.self,
        WorkspaceEvents.ChannelCreated.self, WorkspaceEvents.ChannelUpdated.self, WorkspaceEvents.ChannelDeleted.self,
        WorkspaceEvents.ChannelOwnerChanged.self, WorkspaceEvents.ChannelMemberJoined.self, WorkspaceEvents.ChannelMemberLeft.self,
        WorkspaceEvents.ChannelJoinRefused.self,
        WorkspaceEvents.CoinDebitRequested.self, WorkspaceEvents.CoinRefundRequested.self,
        ChatEvents.ChannelMessageCreated.self, ChatEvents.DirectMessageCreated.self, ChatEvents.MessageEdited.self,
        ChatEvents.MessageDeleted.self, ChatEvents.ReactionsChanged.self, ChatEvents.ReadCursorMoved.self, ChatEvents.RoomChanged.self,
        ChatEvents.ChannelJoinRequested.self,
        GatewayEvents.SessionOpened.self, GatewayEvents.SessionClosed.self, GatewayEvents.GatewayAlive.self,
        GatewayEvents.GatewayStopped.self, GatewayEvents.InterestChanged.self, GatewayEvents.SessionCheckpoint.self,
        GatewayEvents.TypingStarted.self, GatewayEvents.CommunitySignal.self,
        PresenceEvents.StatusChanged.self,
        PaymentEvents.CoinsCredited.self, PaymentEvents.CoinsDebited.self, PaymentEvents.CoinDebitRejected.self,
        PaymentEvents.CoinsRefunded.self,
        StudyEvents.RequestSent.self, StudyEvents.Matched.self, StudyEvents.Dodged.self, StudyEvents.ChatSent.self, StudyEvents.UserTokenChanged.self,
    ]

    /// The payload type of a CloudEvents `type`, if the suite defines it.
    public static func payloadType(named eventType: String) -> (any EventPayload.Type)? {
        payloadTypes.first { $0.eventType == eventType }
    }
}
