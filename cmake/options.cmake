# Interface targets that carry the project's compile settings. Every cudagate
# target links cudagate_options; nothing edits CMAKE_CXX_FLAGS.
add_library(cudagate_options INTERFACE)
target_compile_features(cudagate_options INTERFACE cxx_std_20)
set_target_properties(cudagate_options PROPERTIES INTERFACE_CXX_EXTENSIONS OFF)
target_compile_options(cudagate_options INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align
  -Wunused -Woverloaded-virtual -Wimplicit-fallthrough
  -Werror
  # GCC 12 reports std::string concatenations as overlapping memcpy at -O3
  # (GCC bug 105651), a false positive in libstdc++'s own code.
  $<$<AND:$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>:-Wno-restrict>)
target_include_directories(cudagate_options INTERFACE ${PROJECT_SOURCE_DIR})

if(CUDAGATE_SANITIZE)
  target_compile_options(cudagate_options INTERFACE
    -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_link_options(cudagate_options INTERFACE -fsanitize=address,undefined)
endif()

if(CUDAGATE_TSAN)
  if(CUDAGATE_SANITIZE)
    message(FATAL_ERROR "CUDAGATE_TSAN and CUDAGATE_SANITIZE exclude each other")
  endif()
  # GCC warns that TSan does not model the fences Boost.Asio's handler
  # allocator uses; its reports are what this build is for, not the warning.
  target_compile_options(cudagate_options INTERFACE -fsanitize=thread -fno-omit-frame-pointer
    $<$<CXX_COMPILER_ID:GNU>:-Wno-tsan>)
  target_link_options(cudagate_options INTERFACE -fsanitize=thread)
endif()

if(CUDAGATE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "CUDAGATE_FUZZ needs clang (libFuzzer)")
  endif()
  # UBSan's function-type check cannot describe a coroutine's split parts
  # with its prologue data (LLVM issue 49689: "Cannot represent a difference
  # across sections"); the fuzzers link the API client's coroutines.
  target_compile_options(cudagate_options INTERFACE -fsanitize=fuzzer-no-link,address,undefined
    -fno-sanitize=function -fno-omit-frame-pointer)
  target_link_options(cudagate_options INTERFACE -fsanitize=address,undefined)
endif()

# The sanitizer presets compile unity sources (CMAKE_UNITY_BUILD: each a batch
# of one target's sources), which parses each header once a batch instead of
# once a source. GCC's -Wsubobject-linkage tells a class in a header from one
# in the source by whether it is in the main file, and in a unity build no
# source is: a class holding a type of its own source's anonymous namespace
# is then reported as if a header held it.
if(CMAKE_UNITY_BUILD)
  target_compile_options(cudagate_options INTERFACE $<$<CXX_COMPILER_ID:GNU>:-Wno-subobject-linkage>)
endif()
