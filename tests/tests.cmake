# Every tests/test_*.c is one test program, linked against the static library
# and able to see the library's internal headers (src/).
file(GLOB CFLUX_TESTS_SRC CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/test_*.c)
foreach(src ${CFLUX_TESTS_SRC})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests ${CJSON_INCLUDE_DIRS})
  target_link_libraries(${name} PRIVATE cflux_static)
  add_test(NAME ${name} COMMAND ${name} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
endforeach()
