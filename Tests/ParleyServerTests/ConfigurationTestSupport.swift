import Foundation

/// Writes `yaml` to a fresh temporary file, runs `body` with its path, then removes it.
func withConfigurationFile<T>(_ yaml: String, _ body: (String) async throws -> T) async throws -> T {
    let directory = NSTemporaryDirectory() + "parley-config-tests-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = directory + "/parleyd.yaml"
    try Data(yaml.utf8).write(to: URL(fileURLWithPath: path))
    return try await body(path)
}

/// conf/parleyd.yaml in this checkout.
let committedConfigurationPath = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("conf/parleyd.yaml").path
