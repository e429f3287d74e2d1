# SPDX-License-Identifier: GPL-3.0-or-later
# Writes OUTPUT (wafer/version.h) from TEMPLATE with VERSION and the git revision of SOURCE_DIR
# ("unknown" outside a git checkout; "-modified" appended when tracked files differ from the
# commit), only when the text would change. Run by cmake/Version.cmake at configure time and at
# every build: cmake -DSOURCE_DIR=... -DVERSION=... -DTEMPLATE=... -DOUTPUT=... -P WriteVersion.cmake
execute_process(COMMAND git rev-parse --short=7 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE WAFER_GIT_REVISION OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE not_git ERROR_QUIET)
if(not_git OR NOT WAFER_GIT_REVISION)
  set(WAFER_GIT_REVISION "unknown")
else()
  execute_process(COMMAND git status --porcelain --untracked-files=no
                  WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE changes ERROR_QUIET)
  if(changes)
    string(APPEND WAFER_GIT_REVISION "-modified")
  endif()
endif()
set(PROJECT_VERSION ${VERSION})
configure_file(${TEMPLATE} ${OUTPUT}.new @ONLY)
file(COPY_FILE ${OUTPUT}.new ${OUTPUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUTPUT}.new)
