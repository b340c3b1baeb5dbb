// The Catch2 main, in its own translation unit: it takes ~11 s to compile, once.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
