import ParleyCore

/// Rooms keep each occupant's presence as the others see it, serialized, while occupants
/// enter (`MUCShownPresence`): a fill of N sends each of them N times. Once nobody has entered
/// a room (or changed presence in it) for a few seconds, they go, and the next newcomer makes
/// them again. A room of 1,000 that stays quiet then holds about 2.5 MB less live heap; the
/// resident size hardly moves, as the pages they free are shared with what else the fill
/// left (bench/README.md, MUC memory, fifth round).
extension MUCService {
    /// Every `shownPresenceReleasePeriod` the service looks: a room's presences go after one
    /// to two periods unused.
    func startReleasingShownPresences(state: inout State) {
        guard let period = settings.shownPresenceReleasePeriod else { return }
        state.shownPresenceRelease = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: period)
                self?.releaseQuietShownPresences()
            }
        }
    }

    /// One look at every room (a flag or two each for rooms that keep nothing): the rooms
    /// whose presences were not used since the last look let them go, and so do those whose
    /// recipients' `to`s were not (`MUCRoom.releaseRecipients`); the addresses `send` parsed
    /// go if it parsed none since the last look. Returns how many rooms let their presences go.
    @discardableResult
    func releaseQuietShownPresences() -> Int {
        forgetQuietAddresses()
        return withLockedState { state in
            var released = 0
            var index = state.rooms.startIndex
            while index != state.rooms.endIndex {
                if state.rooms.values[index].releaseShownPresences() { released += 1 }
                _ = state.rooms.values[index].releaseRecipients()
                state.rooms.formIndex(after: &index)
            }
            return released
        }
    }
}
