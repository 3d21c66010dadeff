import Common
import Foundation
import SuiteTesting
import Testing

/// Thousands of stacks run per suite run: each must take its services' files folders with it,
/// or the temporary folder fills the disk (stop 67's CI run failed on a full disk).
@Suite("Test stacks clean up")
struct StackCleanupTests {
    struct Boom: Error {}

    @Test("a stack removes its services' files folders when it ends, and when its body fails")
    func filesFoldersRemoved() async throws {
        for failing in [false, true] {
            let folders = Locked<[String]>([])
            do {
                try await Stack.run(services: [.auth]) { stack in
                    let paths = Array(stack.filesDirectories.values)
                    for path in paths {
                        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
                        #expect(FileManager.default.createFile(atPath: path + "/left-behind", contents: Data("x".utf8)))
                    }
                    folders.withLock { $0 = paths }
                    if failing { throw Boom() }
                }
                #expect(!failing, "the body's error was not rethrown")
            } catch is Boom {
                #expect(failing)
            }
            #expect(!folders.value.isEmpty, "auth stores files: its stack has a files folder")
            for path in folders.value { #expect(!FileManager.default.fileExists(atPath: path), "\(path) left behind") }
        }
    }
}
