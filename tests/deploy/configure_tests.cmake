# A missing test dependency fails the configure (tests/deploy/configure_deps.sh):
# for each library only the tests need, a configure with a pkg-config that
# does not know it must fail and name it, and one with -DFLASH_TESTS=OFF
# must succeed.  Nothing is built; each run takes a second or two.  Label
# configure: they run cmake alone, not the build's code, so the ASan stage
# leaves them to the plain one (tools/run.sh).
foreach(pkg cmocka libmicrohttpd hiredis)
  add_test(NAME configure_fails_without_${pkg}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/deploy/configure_deps.sh ${PROJECT_SOURCE_DIR} ${pkg})
  set_tests_properties(configure_fails_without_${pkg} PROPERTIES TIMEOUT 120 LABELS configure)
endforeach()
