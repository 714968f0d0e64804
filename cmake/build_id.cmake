# Writes ${OUT}: a hash of the sources that decide what machine code a kernel
# key maps to. It is part of every disk-cache key, so a rebuilt numfuse never
# loads kernels produced by different code-generation rules.
file(GLOB_RECURSE sources ${SRC}/mdh/*.cc ${SRC}/mdh/*.h ${SRC}/tune/*.cc ${SRC}/tune/*.h ${SRC}/lower/*.cc
     ${SRC}/lower/*.h ${SRC}/codegen/*.cc ${SRC}/codegen/*.h ${SRC}/jit/*.cc ${SRC}/jit/*.h ${SRC}/core/*.h)
list(SORT sources)
set(all "")
foreach(f ${sources})
  file(SHA256 ${f} h)
  string(APPEND all ${h})
endforeach()
string(SHA256 id "${all}")
string(SUBSTRING ${id} 0 16 id)
set(text "#pragma once\n#define NUMFUSE_BUILD_ID \"${id}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE ${OUT} "${text}")
endif()
