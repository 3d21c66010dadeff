import Events

/// The `auth.user.v1` events about a user, built from the stored row in one place so every
/// publisher carries the same fields (the integer alias and the `name#code` tag included).
extension UserRecord {
    var registeredEvent: AuthEvents.UserRegistered {
        AuthEvents.UserRegistered(
            userId: id, email: email, nickname: nickname, profileImage: profileImage, provider: provider, createdAt: createdAt, alias: alias,
            code: code)
    }

    var profileUpdatedEvent: AuthEvents.UserProfileUpdated {
        AuthEvents.UserProfileUpdated(userId: id, email: email, nickname: nickname, profileImage: profileImage, alias: alias, code: code)
    }
}
