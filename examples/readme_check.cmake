# Fails unless README.md quotes examples/hello.c verbatim in a ```c block.
# Usage: cmake -DREADME=... -DEXAMPLE=... -P readme_check.cmake
file(READ ${README} readme)
file(READ ${EXAMPLE} example)
string(FIND "${readme}" "```c\n${example}```" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README.md does not quote ${EXAMPLE} verbatim in a ```c block")
endif()
