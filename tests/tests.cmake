# Every tests/test_*.c is one test program, linked against the static library
# and able to see the library's internal headers (src/).
file(GLOB CFLUX_TESTS_SRC CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/test_*.c)
foreach(src ${CFLUX_TESTS_SRC})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests ${CJSON_INCLUDE_DIRS}
                             ${PNG_INCLUDE_DIRS} ${JPEG_INCLUDE_DIRS})
  target_link_libraries(${name} PRIVATE cflux_static)
  add_test(NAME ${name} COMMAND ${name} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  if(CFLUX_SANITIZE OR CFLUX_TSAN)   # test.h's TEST_CHEAP_SECONDS: the sanitizers slow every access
    target_compile_definitions(${name} PRIVATE CFLUX_TEST_SANITIZED)
  endif()
endforeach()
# the AVX-512 tile's source, built for AVX2 so that every x86-64 machine with AVX2 tests it
if(CFLUX_BLAS)
  target_compile_definitions(test_gemm_builtin PRIVATE CFLUX_TEST_HAVE_BLAS)
endif()
target_sources(test_gemm_builtin PRIVATE ${PROJECT_SOURCE_DIR}/tests/gemm_avx512_tile.c)
set_source_files_properties(${PROJECT_SOURCE_DIR}/tests/gemm_avx512_tile.c PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma")
# the 8-bit product's reference (tests/qref.h) rounds each operation, as the kernels do
set_source_files_properties(${PROJECT_SOURCE_DIR}/tests/test_qgemm.c ${PROJECT_SOURCE_DIR}/tests/test_quant.c
  PROPERTIES COMPILE_OPTIONS "-ffp-contract=off")
# the kernel choice must not follow OpenBLAS's detection, even at its worst
set_tests_properties(test_gemm_builtin PROPERTIES ENVIRONMENT "OPENBLAS_CORETYPE=Prescott")

add_test(NAME exports COMMAND sh ${PROJECT_SOURCE_DIR}/tests/check_exports.sh
         $<TARGET_FILE:cflux_shared> ${PROJECT_SOURCE_DIR}/include/cflux.h)
if(NOT CFLUX_SANITIZE)
  add_test(NAME install COMMAND sh ${PROJECT_SOURCE_DIR}/tests/check_install.sh ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR})
endif()
add_test(NAME tool COMMAND sh ${PROJECT_SOURCE_DIR}/tests/check_tool.sh $<TARGET_FILE:cflux> ${PROJECT_SOURCE_DIR})
add_test(NAME train_tool COMMAND sh ${PROJECT_SOURCE_DIR}/tests/check_train_tool.sh $<TARGET_FILE:cflux>)
add_test(NAME finetune_tool COMMAND sh ${PROJECT_SOURCE_DIR}/tests/check_finetune.sh $<TARGET_FILE:cflux>)
add_test(NAME json_output COMMAND sh ${PROJECT_SOURCE_DIR}/tests/check_json.sh $<TARGET_FILE:cflux>)
# Python with safetensors and numpy, in the virtual environment that `make test` makes
set(CFLUX_PYTHON "${PROJECT_SOURCE_DIR}/build-venv/bin/python3" CACHE FILEPATH "Python with safetensors, for tests")
set_tests_properties(test_checkpoint_py PROPERTIES ENVIRONMENT "CFLUX_PYTHON=${CFLUX_PYTHON}")
add_test(NAME train_trust COMMAND sh ${PROJECT_SOURCE_DIR}/tests/check_train_trust.sh $<TARGET_FILE:cflux>)
add_test(NAME remember COMMAND sh ${PROJECT_SOURCE_DIR}/tests/check_remember.sh $<TARGET_FILE:cflux>)
add_test(NAME input_range COMMAND sh ${PROJECT_SOURCE_DIR}/tests/check_input_range.sh $<TARGET_FILE:cflux>)
add_test(NAME augment_tool COMMAND sh ${PROJECT_SOURCE_DIR}/tests/check_augment.sh $<TARGET_FILE:cflux> ${CFLUX_PYTHON})
add_test(NAME compat COMMAND sh ${PROJECT_SOURCE_DIR}/tests/check_compat.sh $<TARGET_FILE:cflux> ${PROJECT_SOURCE_DIR})
add_test(NAME corpus_split COMMAND sh ${PROJECT_SOURCE_DIR}/tests/check_corpus_split.sh $<TARGET_FILE:cflux>
         ${PROJECT_SOURCE_DIR})
if(CFLUX_SANITIZE)   # AddressSanitizer reserves terabytes of address space: no ulimit -v case there
  set_tests_properties(train_trust PROPERTIES ENVIRONMENT "CFLUX_SANITIZED=1")
endif()
add_test(NAME signals COMMAND sh ${PROJECT_SOURCE_DIR}/tests/check_signals.sh $<TARGET_FILE:cflux>)
add_test(NAME outputs COMMAND sh ${PROJECT_SOURCE_DIR}/tests/check_outputs.sh $<TARGET_FILE:cflux>)

# Static thread-local storage is in every thread's stack: keep it under 64 KiB.
find_program(CFLUX_READELF NAMES readelf ${CMAKE_READELF})
if(CFLUX_READELF)
  add_test(NAME tls_size COMMAND ${CMAKE_COMMAND} -DREADELF=${CFLUX_READELF} -DLIB=$<TARGET_FILE:cflux_shared>
           -DMAX=65536 -P ${PROJECT_SOURCE_DIR}/tests/tls_size.cmake)
endif()
# the layers' includes, and the symbols their objects reference (nm)
add_test(NAME layers COMMAND sh ${PROJECT_SOURCE_DIR}/tests/check_layers.sh ${PROJECT_SOURCE_DIR} ${CMAKE_NM}
         $<TARGET_OBJECTS:cflux_obj> COMMAND_EXPAND_LISTS)
add_test(NAME errors_doc COMMAND sh ${PROJECT_SOURCE_DIR}/tests/check_errors_doc.sh $<TARGET_FILE:cflux> ${PROJECT_SOURCE_DIR}/docs/errors.md)
# the checker of README.md's and docs/'s commands (make test-docs runs it on them): it can fail
add_test(NAME docs_checker COMMAND sh ${PROJECT_SOURCE_DIR}/tests/check_docs_selftest.sh $<TARGET_FILE_DIR:cflux>)
set_tests_properties(test_oom PROPERTIES TIMEOUT 120)   # a lost out-of-memory path may loop

# The interoperability tests (tests/interop/check.sh): PyTorch and ONNX files made by
# Python from the virtual environment that `make test` makes, run through
# interop_run and the tool.
add_executable(interop_run ${PROJECT_SOURCE_DIR}/tests/interop/run_model.c)
target_include_directories(interop_run PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(interop_run PRIVATE cflux_static)
if(NOT CFLUX_SANITIZE)   # the library's side runs under the sanitizers in test_torch_io and test_onnx
  set(CFLUX_INTEROP_PYTHON "${PROJECT_SOURCE_DIR}/build-venv-interop/bin/python3" CACHE FILEPATH
      "Python with torch, onnx and onnxruntime, for the interoperability tests")
  add_test(NAME interop COMMAND sh ${PROJECT_SOURCE_DIR}/tests/interop/check.sh ${PROJECT_BINARY_DIR}
           ${PROJECT_SOURCE_DIR} ${CFLUX_INTEROP_PYTHON})
  set_tests_properties(interop PROPERTIES TIMEOUT 600)
endif()
# CSV data with word labels: the class names through train, eval, predict, the report
# and the exports (onnx.load with the interoperability tests' Python, where it is made)
add_test(NAME csv_classes COMMAND sh ${PROJECT_SOURCE_DIR}/tests/check_csv_classes.sh $<TARGET_FILE:cflux>
         "${CFLUX_INTEROP_PYTHON}")
if(NOT CFLUX_SANITIZE)   # a Fashion-MNIST run each; the page's code runs under the sanitizers in train_tool
  add_test(NAME report COMMAND sh ${PROJECT_SOURCE_DIR}/tests/check_report.sh $<TARGET_FILE:cflux> ${PROJECT_SOURCE_DIR})
  add_test(NAME report_browser COMMAND sh ${PROJECT_SOURCE_DIR}/tests/check_report.sh $<TARGET_FILE:cflux>
           ${PROJECT_SOURCE_DIR} browser)
endif()
if(CFLUX_WITH_MPI)   # data-parallel training under mpirun (tests/check_mpi.sh)
  add_test(NAME mpi COMMAND sh ${PROJECT_SOURCE_DIR}/tests/check_mpi.sh $<TARGET_FILE:cflux> ${MPIEXEC_EXECUTABLE}
           ${CFLUX_PYTHON})
  set_tests_properties(mpi PROPERTIES TIMEOUT 300)
elseif(NOT CFLUX_MPI STREQUAL "OFF")   # meant to have MPI (AUTO) but none found: said now, and a test that fails
  message(WARNING "cflux: Open MPI is missing, so this build trains on one process only and its mpi test fails: "
                  "apt-get install openmpi-bin libopenmpi-dev (make test installs them as root), then configure again; "
                  "-DCFLUX_MPI=OFF builds without MPI on purpose")
  add_test(NAME mpi COMMAND sh -c "echo 'Open MPI is missing: apt-get install openmpi-bin libopenmpi-dev'; exit 1")
endif()
