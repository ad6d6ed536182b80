// Schema evolution and the page server: a client whose types changed is
// refused with a message saying how to convert, and converting the stopped
// server's directory works (tests/schema/evolution.cpp's releases).
#include "harness.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace qs_pstest;
using namespace qs_test;

namespace {

process run_release(const server_process& s, const char* program, const std::string& where, const char* mode,
                    const std::string& dir, const std::string& tag) {
  return spawn({program, where, mode}, logged(dir, tag, {"QS_SECRET=" + s.secret()}));
}

}  // namespace

TEST_CASE("pageserver: schema evolution is refused through the server and works on its stopped directory",
          "[pageserver][evolution]") {
  test_dir dir;
  server_process s(dir.path());
  s.start();
  process create = run_release(s, QS_EVOLUTION_V1, s.unix_url(), "create", dir.path(), "create");
  REQUIRE(create.wait(60000) == 0);

  process refused = run_release(s, QS_EVOLUTION_V2, s.unix_url(), "evolve", dir.path(), "refused");
  REQUIRE(refused.wait(60000) == 3);
  CHECK_THAT(refused.err(), Catch::Contains("served by qs-pageserver: stop the server and open its directory"));
  process still_old = run_release(s, QS_EVOLUTION_V1, s.tcp_url(), "check", dir.path(), "still_old");
  REQUIRE(still_old.wait(60000) == 0);

  REQUIRE(s.terminate() == 0);
  process offline = run_release(s, QS_EVOLUTION_V2, dir.sub("db"), "evolve", dir.path(), "offline");
  REQUIRE(offline.wait(60000) == 0);
  CHECK_THAT(offline.err(), Catch::Contains("Part: 302 objects converted"));

  s.start();
  process served = run_release(s, QS_EVOLUTION_V2, s.tcp_url(), "check", dir.path(), "served");
  REQUIRE(served.wait(60000) == 0);
}
