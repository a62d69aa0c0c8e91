import ParleyCore
import ParleyStorage
import Testing

@testable import ParleyServer

/// The node configuration form both ways (XEP-0060 §8.2) and publish-options as
/// preconditions (§7.1.5): values compared by meaning, not spelling.
@Suite struct PEPNodeConfigurationFormTests {
    @Test func submittedFieldsChangeWhatTheyName() throws {
        let changed = try PEPNodeConfiguration().applying(
            [
                ("pubsub#access_model", ["roster"]), ("pubsub#roster_groups_allowed", ["Family", "Friends"]),
                ("pubsub#max_items", ["max"]), ("pubsub#persist_items", ["false"]), ("pubsub#notify_retract", ["0"]),
                ("pubsub#send_last_published_item", ["never"]), ("pubsub#title", ["T"]), ("urn:example:unknown", ["x"]),
            ], serverMaxItems: 10)
        #expect(changed.accessModel == .roster && changed.rosterGroupsAllowed == ["Family", "Friends"])
        #expect(changed.maxItems == nil && !changed.persistItems && !changed.notifyRetract)
        #expect(changed.sendLastPublishedItem == .never && changed.title == "T")
        #expect(changed.itemsKept(serverMaxItems: 10) == 0, "a node that does not persist keeps nothing")
    }

    @Test func valuesItCannotTakeAreRefusedNamingTheField() {
        for (field, value) in [
            ("pubsub#max_items", "11"), ("pubsub#max_items", "0"), ("pubsub#max_items", "many"),
            ("pubsub#persist_items", "yes"), ("pubsub#access_model", "authorize"), ("pubsub#send_last_published_item", "always"),
        ] {
            #expect(throws: StanzaError.self) { try PEPNodeConfiguration().applying([(field, [value])], serverMaxItems: 10) }
            do {
                _ = try PEPNodeConfiguration().applying([(field, [value])], serverMaxItems: 10)
            } catch {
                #expect(error.condition == .notAcceptable && error.text?.contains(field) == true, "\(error)")
            }
        }
    }

    @Test func preconditionsCompareMeanings() {
        var node = PEPNodeConfiguration()
        node.maxItems = nil
        #expect(node.firstUnmet([("pubsub#max_items", ["max"]), ("pubsub#persist_items", ["1"])], serverMaxItems: 10) == nil)
        #expect(node.firstUnmet([("pubsub#persist_items", ["true"]), ("pubsub#access_model", ["open"])], serverMaxItems: 10) == "pubsub#access_model")
        #expect(node.firstUnmet([("pubsub#max_items", ["5"])], serverMaxItems: 10) == "pubsub#max_items")
        #expect(node.firstUnmet([("pubsub#max_items", ["500"])], serverMaxItems: 10) == "pubsub#max_items", "an impossible value is unmet")
    }

    @Test func theFormShowsTheConfiguration() {
        var configuration = PEPNodeConfiguration()
        configuration.accessModel = .whitelist
        configuration.maxItems = nil
        let form = configuration.form()
        let fields = Dictionary(
            uniqueKeysWithValues: form.children("field", namespace: XMLNamespace.dataForms).map {
                ($0[attribute: "var"] ?? "", $0.children("value", namespace: XMLNamespace.dataForms).map(\.text))
            })
        #expect(fields["FORM_TYPE"] == ["http://jabber.org/protocol/pubsub#node_config"])
        #expect(fields["pubsub#access_model"] == ["whitelist"] && fields["pubsub#max_items"] == ["max"])
        let back = try? PEPNodeConfiguration().applying(
            fields.filter { $0.key != "FORM_TYPE" }.map { ($0.key, $0.value) }, serverMaxItems: 10)
        #expect(back == configuration, "the form read back is the configuration")
    }
}
