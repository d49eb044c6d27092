// main() for every Catch2 test binary.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
