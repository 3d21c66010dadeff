import HummingbirdCore
import Logging
import NIOCore

/// The gateway's server connections: hummingbird's HTTP/1 channel, except for the WebSocket
/// upgrades a `DetachedUpgrades` takes (every protocol's), which run as NIO handlers with no task
/// of their own (docs/benchmarks.md, parts 4 and 5).
///
/// hummingbird's server runs every connection in a task for the connection's life; a WebSocket
/// waits there for its next frame, and the task keeps the stack slabs of its deepest call chain
/// (16.8 of an idle Socket.IO socket's 29 KiB). Here a connection's first request head is read
/// before the pipeline is chosen: a detached upgrade gets NIO's HTTP upgrade handlers and the
/// protocol's frame handler, and `handle` returns at once; anything else gets hummingbird's
/// pipeline and is handled as before, in the connection's task.
struct RealtimeChildChannel: ServerChildChannel {
    struct Value: ServerChildChannelValue {
        let channel: any Channel
        /// Hummingbird's value once the head chose it; `nil` for a detached upgrade.
        let route: EventLoopFuture<HTTP1Channel.Value?>
    }

    let inner: HTTP1Channel
    let detached: DetachedUpgrades

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let promise = channel.eventLoop.makePromise(of: HTTP1Channel.Value?.self)
            let sniffer = RequestHeadSniffer(maxHeadBytes: detached.maxHeadBytes) { head, pipeline in
                if let upgrade = detached.upgrade(for: head) {
                    try detached.configure(upgrade, on: pipeline)
                    return { promise.succeed(nil) }
                }
                // hummingbird's setup configures the pipeline synchronously on the loop.
                let future = inner.setup(channel: channel, logger: logger)
                return { promise.completeWith(future.map { $0 }) }
            } onFailure: { error in
                promise.fail(error)
            }
            try channel.pipeline.syncOperations.addHandler(sniffer)
            return Value(channel: channel, route: promise.futureResult)
        }
    }

    func handle(value: Value, logger: Logger) async {
        guard let route = try? await value.route.get() else { return }
        await inner.handle(value: route, logger: logger)
    }
}
