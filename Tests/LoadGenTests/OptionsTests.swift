import Foundation
import Testing
@testable import LoadGen

@Suite("Load generator options: defaults and validation")
struct OptionsTests {
    func generator(_ change: (inout LoadGenOptions) -> Void = { _ in }, fileLimit: Int = 1 << 20) throws -> LoadGenerator {
        var options = LoadGenOptions()
        change(&options)
        return try LoadGenerator(options, runId: "test", fileLimit: fileLimit)
    }

    func usageError(_ change: (inout LoadGenOptions) -> Void, fileLimit: Int = 1 << 20) -> String? {
        do {
            _ = try generator(change, fileLimit: fileLimit)
            return nil
        } catch let error as LoadGenUsageError {
            return error.description
        } catch {
            return "unexpected \(error)"
        }
    }

    @Test func usersAndSocketsDefaultToChannelsTimesMembers() throws {
        let g = try generator {
            $0.channels = 7; $0.members = 3
        }
        #expect(g.plan.users == 21)
        #expect(g.plan.sockets == 21)
        #expect(g.plan.runId == "test")
        #expect(g.plan.channelsPerWorkspace == 100)
    }

    @Test func explicitUsersAndSocketsAreKept() throws {
        let g = try generator {
            $0.channels = 4; $0.members = 3; $0.users = 5; $0.sockets = 9; $0.channelsPerWorkspace = 2
        }
        #expect(g.plan.users == 5)
        #expect(g.plan.sockets == 9)
        #expect(g.plan.workspaces == 2)
    }

    @Test func anImpossiblePlanIsAPlanError() {
        #expect(throws: LoadGenError.self) {
            try generator {
                $0.channels = 2; $0.members = 3; $0.users = 2
            }
        }
    }

    @Test func rateSecondsAndSendersMustBePositive() {
        let message = "--rate, --seconds and --senders must be positive"
        #expect(usageError { $0.rate = 0 } == message)
        #expect(usageError { $0.seconds = 0 } == message)
        #expect(usageError { $0.senders = -1 } == message)
    }

    @Test func theInjectionCodecIsOneKafkaKnows() throws {
        #expect(usageError { $0.kafkaCompression = "brotli" } == "--kafka-compression must be one of lz4, zstd, snappy, gzip, none, not brotli")
        for codec in ["lz4", "zstd", "snappy", "gzip", "none"] {
            #expect(usageError { $0.kafkaCompression = codec } == nil, "\(codec)")
        }
    }

    @Test func kafkaInjectionNeedsBrokers() throws {
        #expect(usageError { $0.inject = .kafka } == "--inject kafka needs --brokers")
        _ = try generator {
            $0.inject = .kafka; $0.brokers = "127.0.0.1:9092"
        }
    }

    @Test func socketsMustFitTheOpenFilesLimit() throws {
        // 5 000 default sockets + 64 spare descriptors.
        #expect(usageError({ _ in }, fileLimit: 5_063) == "5000 sockets need more file descriptors than the limit 5063")
        _ = try generator(fileLimit: 5_064)
    }

    @Test func watchedProcessesAreParsedAndTheGatewayAndLoadgenAdded() throws {
        let g = try generator {
            $0.watch = ["postgres=12", "fanout=34"]; $0.gatewayPid = 56
        }
        #expect(g.watched.map(\.name) == ["postgres", "fanout", "gateway", "loadgen"])
        #expect(g.watched.map(\.pid) == [12, 34, 56, getpid()])
        // A gateway already watched under another name is not added twice.
        let again = try generator {
            $0.watch = ["gw=56"]; $0.gatewayPid = 56
        }
        #expect(again.watched.map(\.name) == ["gw", "loadgen"])
    }

    @Test("--watch needs name=pid", arguments: ["postgres", "postgres=", "postgres=abc", "=x"])
    func badWatchEntries(entry: String) {
        #expect(usageError { $0.watch = [entry] } == "--watch expects name=pid")
    }
}
