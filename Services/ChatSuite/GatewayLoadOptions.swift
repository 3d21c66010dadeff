import ArgumentParser
import LoadGen

/// The options every gateway benchmark takes.
struct GatewayLoadOptions: ParsableArguments {
    @Option(help: "Gateway base URL.")
    var gateway: String = "http://127.0.0.1:8080"

    @Option(help: "SesacKey header value.")
    var sesacKey: String = "dev-key"

    @Option(help: "Concurrent clients.")
    var concurrency: Int = 8

    @Option(help: "Duration of each phase in seconds.")
    var seconds: Int = 10

    var client: GatewayClient { GatewayClient(base: gateway, sesacKey: sesacKey) }
    var runner: LoadRunner { LoadRunner(concurrency: concurrency, duration: .seconds(seconds)) }
}
