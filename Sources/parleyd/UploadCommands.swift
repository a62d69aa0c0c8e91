import ArgumentParser
import Foundation
import Logging
import ParleyHTTP
import ParleyServer
import ParleyStorage

/// `parleyd uploads list|delete`: an account's XEP-0363 files.
struct Uploads: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "uploads", abstract: "List or delete an account's uploaded files.",
        subcommands: [ListUploads.self, DeleteUploads.self])
}

struct ListUploads: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List an account's uploaded files.")

    @OptionGroup var options: ConfigOptions
    @Argument(help: "The username or bare JID.") var user: String

    func run() async throws {
        let (configuration, username) = try await accountTarget(options, user)
        let maintenance = try await uploadMaintenance(configuration)
        let formatter = ISO8601DateFormatter()
        for record in try await maintenance.list(owner: username) {
            print("\(record.id)  \(record.size)  \(record.contentType)  \(formatter.string(from: record.createdAt))  \(record.state.rawValue)  \(record.filename)")
        }
    }
}

struct DeleteUploads: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete an account's uploaded file (by id or name), or all of them.")

    @OptionGroup var options: ConfigOptions
    @Argument(help: "The username or bare JID.") var user: String
    @Argument(help: "The upload id or file name; all files when left out.") var file: String?

    func run() async throws {
        let (configuration, username) = try await accountTarget(options, user)
        let deleted = try await uploadMaintenance(configuration).delete(owner: username, file: file)
        if let file, deleted.isEmpty { throw ValidationError("\(username)@\(configuration.domain) has no file \(file)") }
        print("deleted \(deleted.count) file(s) of \(username)@\(configuration.domain)")
    }
}

func uploadMaintenance(_ configuration: ServerConfiguration) async throws -> UploadMaintenance {
    let storage = try await openStorage(configuration)
    let directory = configuration.http.upload.directory ?? "\(configuration.dataDirectory)/uploads"
    return UploadMaintenance(
        metadata: storage, store: DirectoryUploadStore(directory: directory), logger: Logger(label: "parleyd.uploads"))
}
