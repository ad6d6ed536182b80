// runs: the software-mode program of the test install. Each run counts
// itself in a persistent root and prints the count: run 1 prints 1, run 2
// prints 2.
#include <qs/qs.hpp>

#include <cstdint>
#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: runs DIR\n");
    return 2;
  }
  auto db = qs::database::open(argv[1]);
  std::int64_t n = 0;
  db.run([&] { n = ++db.root<std::int64_t>("runs"); });
  std::printf("%lld\n", static_cast<long long>(n));
  return 0;
}
