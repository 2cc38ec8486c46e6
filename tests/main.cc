// Catch2's main. GCC 12 at -O1 with the sanitizers warns inside
// libstdc++'s <regex> as used by Catch2; not our code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#pragma GCC diagnostic pop
