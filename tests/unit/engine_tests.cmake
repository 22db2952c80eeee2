# Engine tests: tests/unit/test_api_*.c (one cmocka program per area) and
# tests/unit/test_mp_*.c (multi-process) share tests/common/helpers.c.  tests/CMakeLists.txt
# has already made each of them a program linked with flashstock_static and
# cmocka; this fragment adds the helpers and a label.
# unpriv.c: checks run as the permission fixture's users (tests/unit/perm_tests.cmake)
add_library(flash_test_helpers STATIC ${CMAKE_CURRENT_SOURCE_DIR}/common/helpers.c
            ${CMAKE_CURRENT_SOURCE_DIR}/common/unpriv.c)
target_link_libraries(flash_test_helpers PUBLIC flashstock_static PkgConfig::CMOCKA)

file(GLOB FLASH_ENGINE_TEST_SRC CONFIGURE_DEPENDS
     ${CMAKE_CURRENT_SOURCE_DIR}/*/test_api_*.c ${CMAKE_CURRENT_SOURCE_DIR}/*/test_mp_*.c)
foreach(src ${FLASH_ENGINE_TEST_SRC})
  get_filename_component(name ${src} NAME_WE)
  target_link_libraries(${name} PRIVATE flash_test_helpers)
  set_tests_properties(${name} PROPERTIES LABELS engine TIMEOUT 120)
endforeach()
