# The prefix install (tests/deploy/install_prefix.sh): `cmake --install` into a
# temporary prefix, the README's C example (tests/deploy/example_app.c) built
# against it with pkg-config and run on a fresh segment, the installed
# `flashstock --help` and its manual pages, the monitoring files (dashboards/,
# docs/monitoring.md), and each binding's example built against the prefix
# alone (bindings/<lang>/install_check.sh).  A sanitizer build's library needs
# its runtime in the example too.
if(TARGET flashstock AND TARGET flashstock_shared)
  set(FLASH_APP_FLAGS "")
  if(FLASH_SANITIZE)
    set(FLASH_APP_FLAGS "-fsanitize=address,undefined")
  elseif(FLASH_TSAN)
    set(FLASH_APP_FLAGS "-fsanitize=thread")
  endif()
  # the bindings' own checks of their install, where they are built
  set(FLASH_INSTALL_BINDINGS "")
  if(FLASH_BUILD_BINDINGS)
    set(FLASH_INSTALL_BINDINGS "python go java")
  endif()
  # the manual pages, where they are built (tools/CMakeLists.txt, FLASH_MAN)
  set(FLASH_INSTALL_MANDIR "")
  if(TARGET flashstock_man)
    set(FLASH_INSTALL_MANDIR "${CMAKE_INSTALL_MANDIR}")
  endif()
  add_test(NAME install_prefix
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/deploy/install_prefix.sh ${CMAKE_COMMAND}
                   ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR} ${CMAKE_INSTALL_LIBDIR}
                   ${CMAKE_INSTALL_BINDIR} ${CMAKE_C_COMPILER} "${FLASH_APP_FLAGS}"
                   "${FLASH_INSTALL_BINDINGS}" "${FLASH_INSTALL_MANDIR}" ${CMAKE_INSTALL_DATADIR}
                   ${CMAKE_INSTALL_DOCDIR})
  set_tests_properties(install_prefix PROPERTIES TIMEOUT 300)
endif()
