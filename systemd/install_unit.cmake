# install_unit.cmake -- run by `cmake --install`: the unit template with
# ExecStart= naming PREFIX/BINDIR/flashstock of this install's prefix.
# FLASH_UNIT_IN and FLASH_UNIT_BINDIR come from systemd/CMakeLists.txt.
if(IS_ABSOLUTE "${FLASH_UNIT_BINDIR}")
  set(FLASHSTOCK_BIN "${FLASH_UNIT_BINDIR}/flashstock")
else()
  set(FLASHSTOCK_BIN "${CMAKE_INSTALL_PREFIX}/${FLASH_UNIT_BINDIR}/flashstock")
endif()
set(dir "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
message(STATUS "Installing: ${dir}/flashstock-serve@.service")
configure_file("${FLASH_UNIT_IN}" "${dir}/flashstock-serve@.service" @ONLY)
