# Settings every Wingspan target shares, in one place.

# Warnings for our own code (third-party headers come in as SYSTEM); -Werror with
# -DWINGSPAN_WERROR=ON (the sanitizer job). The sanitizer flags themselves are set for the whole
# build in the top CMakeLists.txt: every program that links an instrumented library must link
# the sanitizer runtime too, including the tests and benchmarks.
function(wingspan_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if(WINGSPAN_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# The version, generated once into the build tree: <wingspan/version.hpp>.
configure_file(${CMAKE_CURRENT_LIST_DIR}/version.hpp.in ${CMAKE_BINARY_DIR}/generated/wingspan/version.hpp @ONLY)

# The build tree has the install tree's layout for data: a program in bin/ (or a suite in
# tests/) finds the profiles, recipes and sample data at ../share/wingspan/, as an installed one
# does at <prefix>/share/wingspan/. Links, so an edited profile takes effect without a rebuild,
# and no source path is compiled into a program.
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/share/wingspan)
foreach(data IN ITEMS "profiles=${CMAKE_SOURCE_DIR}/profiles" "recipes=${CMAKE_SOURCE_DIR}/resources/recipes"
                      "sample-data=${CMAKE_SOURCE_DIR}/resources/sample-data")
  string(REPLACE "=" ";" data "${data}")
  list(GET data 0 name)
  list(GET data 1 source)
  file(REMOVE ${CMAKE_BINARY_DIR}/share/wingspan/${name})
  file(CREATE_LINK ${source} ${CMAKE_BINARY_DIR}/share/wingspan/${name} SYMBOLIC)
endforeach()
