import Foundation

/// The gateway's id (`gateway.id`): the key of its deliveries, interest records and sessions.
/// It must differ between running gateways (two replicas with one id would steal each other's
/// deliveries) and should survive a restart (presence then ends the old process's sessions at
/// once instead of after the liveness timeout).
enum GatewayIdentity {
    /// `gateway.id` when set; else `instance.id` when set; else derived from the host name. In a
    /// container (the gateway is PID 1) the host name is the container's own, different for each
    /// replica of `docker-compose up --scale gateway=N` and kept across restarts of that
    /// container, so the id is `gateway-<hostname>`; elsewhere several gateways may share a host,
    /// so the process id is added.
    static func id(configured: String?, instanceId: String?, hostname: String, pid: Int32) -> String {
        if let configured = configured?.trimmingCharacters(in: .whitespaces), !configured.isEmpty { return configured }
        if let instanceId = instanceId?.trimmingCharacters(in: .whitespaces), !instanceId.isEmpty { return instanceId }
        let host = hostname.isEmpty ? "localhost" : hostname
        return pid == 1 ? "gateway-\(host)" : "gateway-\(host)-\(pid)"
    }
}
