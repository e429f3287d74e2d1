# SPDX-License-Identifier: GPL-3.0-or-later
# The AppStream metainfo (share/metainfo/<id>.metainfo.xml) from wafer-studio.metainfo.xml.in:
# its <releases> come from the Debian changelog (installer/changelog, newest first: version, date
# and the bullet points), so a release is written down once; the web address is WAFER_PUBLIC_URL,
# under which the repository's resources/screenshots are published as screenshots/.
# Included by installer/CMakeLists.txt; sets WAFER_METAINFO (the generated file).
set(WAFER_APPSTREAM_ID example.a_seed_e1140c5a.WaferStudio)
set(WAFER_PUBLIC_URL "https://wafer-studio.a-seed-e1140c5a.example" CACHE STRING
    "The project's web address: the AppStream page links it, with screenshots under /screenshots/")
set(WAFER_SCREENSHOT_URL "${WAFER_PUBLIC_URL}/screenshots")

# Reads a Debian changelog into AppStream <release> elements (in `out`). An entry's closing
# " -- " line with no version line before it or a month name Debian does not allow, or a
# changelog with no complete entry, is a configure error naming the problem.
function(wafer_changelog_releases changelog out)
  # As XML character data, split into lines; semicolons are held as a placeholder meanwhile
  # (CMake's lists are split on them).
  file(READ ${changelog} text)
  string(REPLACE "&" "&amp;" text "${text}")
  string(REPLACE "<" "&lt;" text "${text}")
  string(REPLACE ">" "&gt;" text "${text}")
  string(REPLACE ";" "@semicolon@" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(months Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec)
  set(xml "")
  set(version "")
  set(items "")
  set(item "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^[a-z0-9.+-]+ \\(([^)]+)\\) ")
      set(version ${CMAKE_MATCH_1})
      set(items "")
      set(item "")
    elseif(line MATCHES "^  \\* (.*)$")
      if(item)
        list(APPEND items "${item}")
      endif()
      set(item "${CMAKE_MATCH_1}")
    elseif(line MATCHES "^    +(.*)$" AND item)
      string(APPEND item " ${CMAKE_MATCH_1}")
    elseif(line MATCHES "^ -- .*  [A-Z][a-z][a-z], ([0-9]+) ([A-Z][a-z][a-z]) ([0-9]+) ")
      set(day ${CMAKE_MATCH_1})
      set(year ${CMAKE_MATCH_3})
      list(FIND months ${CMAKE_MATCH_2} month)
      if(NOT version OR month LESS 0)
        message(FATAL_ERROR "${changelog}: the entry ending \"${line}\" has no version or a "
                            "date Debian's changelog format does not allow")
      endif()
      math(EXPR month "${month} + 1")
      if(month LESS 10)
        set(month 0${month})
      endif()
      string(LENGTH "${day}" digits)
      if(digits EQUAL 1)
        set(day 0${day})
      endif()
      if(item)
        list(APPEND items "${item}")
      endif()
      string(APPEND xml "    <release version=\"${version}\" date=\"${year}-${month}-${day}\">\n"
                        "      <description>\n        <ul>\n")
      foreach(entry IN LISTS items)
        string(APPEND xml "          <li>${entry}</li>\n")
      endforeach()
      string(APPEND xml "        </ul>\n      </description>\n    </release>\n")
      set(version "")
      set(items "")
      set(item "")
    endif()
  endforeach()
  if(NOT xml)
    message(FATAL_ERROR "${changelog}: no complete entry (a version line, bullet points and a "
                        "\" -- name <address>  date\" line)")
  endif()
  string(REGEX REPLACE "\n$" "" xml "${xml}")
  string(REPLACE "@semicolon@" ";" xml "${xml}")
  set(${out} "${xml}" PARENT_SCOPE)
endfunction()

wafer_changelog_releases(${CMAKE_CURRENT_SOURCE_DIR}/changelog WAFER_APPSTREAM_RELEASES)
set(WAFER_METAINFO ${CMAKE_CURRENT_BINARY_DIR}/${WAFER_APPSTREAM_ID}.metainfo.xml)
configure_file(wafer-studio.metainfo.xml.in ${WAFER_METAINFO} @ONLY)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS changelog)
