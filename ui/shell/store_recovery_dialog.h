// SPDX-License-Identifier: GPL-3.0-or-later
// The studio's answer to a damaged run store: a dialog that says what happened (the file has not
// been changed) and offers only the routes back that exist (engine/store/store_recovery.h):
// salvage what SQLite can still read, restore the last good backup (when there is one), start a
// fresh store that keeps the damaged file beside it, or go on without the store. A route that
// fails is reported in the same dialog, which then offers the routes still open. Never an empty
// run list that looks like lost history. GUI thread only.
#pragma once

#include <QString>
#include <filesystem>

class QWidget;

namespace ws::store {
struct StoreHealth;
}

namespace ws::ui {

// Shows the dialog for `db`; runs the chosen recovery (reporting its outcome in a second message
// box). Returns true when the store was recovered (or a fresh one started) and can be opened
// again; false when the user went on without it.
bool offerStoreRecovery(QWidget* parent, const std::filesystem::path& db,
                        const store::StoreHealth& health);

}  // namespace ws::ui
