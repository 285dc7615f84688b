# tls_size.cmake - the library's static thread-local storage stays small.
#
#   cmake -DREADELF=readelf -DLIB=libcflux.so -DMAX=65536 -P tls_size.cmake
#
# Static TLS is carved out of every thread's stack, in every program linked with
# cflux, whether it calls cflux or not: 790 KiB of it (GEMM packing buffers and
# error-trace lines) once made threads with stacks of 512 KiB or less impossible to
# create. Big per-thread buffers belong on the heap (see src/rt/gemm_builtin.c).
execute_process(COMMAND ${READELF} -lW ${LIB} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${READELF} -lW ${LIB} failed")
endif()
# "  TLS  Offset VirtAddr PhysAddr FileSiz MemSiz Flg Align": MemSiz is the size.
if(NOT out MATCHES "\n *TLS +0x[0-9a-f]+ +0x[0-9a-f]+ +0x[0-9a-f]+ +0x[0-9a-f]+ +0x([0-9a-f]+)")
  message(STATUS "no TLS segment: 0 bytes of static thread-local storage")
  return()
endif()
math(EXPR bytes "0x${CMAKE_MATCH_1}")
if(bytes GREATER MAX)
  message(FATAL_ERROR "static thread-local storage of ${LIB} is ${bytes} bytes, more than ${MAX}")
endif()
message(STATUS "static thread-local storage: ${bytes} bytes (limit ${MAX})")
