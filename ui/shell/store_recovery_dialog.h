// The studio's answer to a damaged run store: a dialog that says what happened (the file has not
// been changed) and offers the two routes back from engine/store/store_recovery.h — salvage what
// SQLite can still read, or restore the last good backup — or to go on without the store. Never
// an empty run list that looks like lost history. GUI thread only.
#pragma once

#include <QString>
#include <filesystem>

class QWidget;

namespace ws::store {
struct StoreHealth;
}

namespace ws::ui {

// Shows the dialog for `db`; runs the chosen recovery (reporting its outcome in a second message
// box). Returns true when the store was recovered and can be opened again.
bool offerStoreRecovery(QWidget* parent, const std::filesystem::path& db,
                        const store::StoreHealth& health);

}  // namespace ws::ui
