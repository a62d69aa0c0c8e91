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

    /// One look at every room (a flag each for rooms that keep nothing): the rooms whose
    /// presences were not used since the last look let them go. Returns how many did.
    @discardableResult
    func releaseQuietShownPresences() -> Int {
        withLockedState { state in
            state.rooms.values.reduce(0) { $0 + ($1.releaseShownPresences() ? 1 : 0) }
        }
    }
}
