/// A domain refusal a service defines once (say, chat's `RoomError`) and every surface renders in
/// its own vocabulary: `/v1` as the contract's E-code (`ErrorMiddleware`), Smooth as its envelope
/// code (`SmoothErrorMiddleware`), whether thrown directly or inside a transaction. The mapping
/// stays with the service that owns the rule; routes just throw.
public protocol SurfaceRefusal: Error, Sendable {
    /// The refusal on `/v1`.
    var apiError: APIError { get }
    /// The refusal on one of Smooth's servers.
    func smoothError(_ surface: SmoothSurface) -> SmoothError
}
