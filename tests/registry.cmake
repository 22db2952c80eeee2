# Tests that cannot vanish.  Tests are registered by many fragments, some of
# them behind a guard (if(TARGET ...), a build option), so a target that
# went missing used to drop its tests without a word.  tests/tests.txt lists
# every test of the project with the builds that register it; at the end of
# the configure (deferred from the top-level CMakeLists.txt, after bindings/)
# flash_tests_match_the_list compares that list with what this build
# registered, in every directory, and fails the configure on any difference:
# a listed test not registered (its target or its guard went missing), or a
# registered test not listed (add it to the list).
#
# Builds: plain (no sanitizer), asan (-DFLASH_SANITIZE=ON), tsan
# (-DFLASH_TSAN=ON), fuzz (-DFLASH_LIBFUZZER=ON with clang); a test of the
# bindings says "bindings": the plain build with FLASH_BINDINGS (the default).

# Every test registered in directory @p dir and below, into @p out.
function(flash_tests_registered dir out)
  get_property(t DIRECTORY ${dir} PROPERTY TESTS)
  get_property(subs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(s ${subs})
    flash_tests_registered(${s} st)
    list(APPEND t ${st})
  endforeach()
  set(${out} ${t} PARENT_SCOPE)
endfunction()

function(flash_tests_match_the_list)
  if(FLASH_LIBFUZZER)
    set(kind fuzz)
  elseif(FLASH_TSAN)
    set(kind tsan)
  elseif(FLASH_SANITIZE)
    set(kind asan)
  else()
    set(kind plain)
  endif()
  set(list_file ${PROJECT_SOURCE_DIR}/tests/tests.txt)
  set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${list_file})
  file(STRINGS ${list_file} lines REGEX "^[A-Za-z0-9_.-]+ ")
  set(want "")
  set(listed "")
  foreach(line ${lines})
    string(REGEX REPLACE "[ \t]+" ";" f "${line}")
    list(POP_FRONT f name)
    if(name IN_LIST listed)
      message(FATAL_ERROR "tests/tests.txt: ${name} is listed twice")
    endif()
    list(APPEND listed ${name})
    foreach(b ${f})
      if(NOT b MATCHES "^(plain|asan|tsan|fuzz|bindings)$")
        message(FATAL_ERROR "tests/tests.txt: ${name}: unknown build '${b}'")
      endif()
      if(b STREQUAL kind OR (b STREQUAL "bindings" AND FLASH_BUILD_BINDINGS))
        list(APPEND want ${name})
      endif()
    endforeach()
  endforeach()
  flash_tests_registered(${PROJECT_SOURCE_DIR} have)
  set(missing ${want})
  list(REMOVE_ITEM missing ${have})
  set(extra ${have})
  list(REMOVE_ITEM extra ${want})
  list(LENGTH want nwant)
  list(LENGTH have nhave)
  if(missing OR extra)
    set(why "")
    if(missing)
      string(REPLACE ";" " " missing "${missing}")
      string(APPEND why "\n  listed, not registered (a target or a guard went missing): ${missing}")
    endif()
    if(extra)
      string(REPLACE ";" " " extra "${extra}")
      string(APPEND why "\n  registered, not listed (add them to tests/tests.txt): ${extra}")
    endif()
    message(FATAL_ERROR "tests/tests.txt lists ${nwant} tests for the ${kind} build, "
            "${nhave} are registered.${why}")
  endif()
  message(STATUS "tests: the ${nhave} tests tests/tests.txt lists for the ${kind} build are registered")
endfunction()
