// toml++'s implementation, compiled once for the whole project: every
// other file includes its headers with TOML_HEADER_ONLY=0 (CMakeLists.txt),
// which keeps the parser out of each of them and shortens the build.
#define TOML_IMPLEMENTATION
#include <toml++/toml.h>
