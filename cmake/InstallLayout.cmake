# SPDX-License-Identifier: GPL-3.0-or-later
# Where the installed files go (GNUInstallDirs) and the share folder the programs look for beside
# themselves (engine/core/paths.h): <prefix>/share/wafer-studio holding presets/, resources/, the
# user guide docs/ (the studio's Help), README.md, CHANGELOG.md and HACKING.md. The build tree gets the same folder, linked to the sources, so that programs run
# from the build tree and installed ones find their data the same way.
include(GNUInstallDirs)
if(IS_ABSOLUTE "${CMAKE_INSTALL_DATADIR}")
  message(FATAL_ERROR "CMAKE_INSTALL_DATADIR must be relative to the prefix (e.g. share), so "
                      "that an installed Wafer Studio can be moved: got ${CMAKE_INSTALL_DATADIR}")
endif()
set(WAFER_DATA_SUBDIR "${CMAKE_INSTALL_DATADIR}/wafer-studio")

set(build_share "${PROJECT_BINARY_DIR}/${WAFER_DATA_SUBDIR}")
file(MAKE_DIRECTORY "${build_share}")
foreach(item presets resources docs README.md CHANGELOG.md HACKING.md)
  file(CREATE_LINK "${PROJECT_SOURCE_DIR}/${item}" "${build_share}/${item}" SYMBOLIC)
endforeach()
