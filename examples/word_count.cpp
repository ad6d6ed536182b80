// word_count: an ordered map in the database that counts words across runs.
//
//   build/examples/word_count /tmp/words.qs     prints "brown=1 dog=1 fox=1 ... the=2"
//   build/examples/word_count /tmp/words.qs     prints "brown=2 dog=2 fox=2 ... the=4"
//
// The map is a qs::btree_map kept as a named root: a B+-tree whose nodes are
// persistent objects of a page each. Lookups and updates are pointer chasing
// over the tree's pages, and the commit logs the bytes they changed, like
// any other object's. The interface is std::map's.
#include <qs/btree.hpp>
#include <qs/qs.hpp>

#include <cstdio>
#include <sstream>
#include <string>
#include <utility>

using word_counts = qs::btree_map<std::string, long>;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DATABASE-DIR\n", argv[0]);
    return 2;
  }
  try {
    auto db = qs::database::open(argv[1]);
    qs::transaction tx(db);
    word_counts& counts = db.root<word_counts>("counts");
    std::istringstream text("the quick brown fox jumps over the lazy dog");
    for (std::string w; text >> w;) ++counts[w];
    const char* sep = "";
    for (auto [word, n] : std::as_const(counts)) {
      std::printf("%s%.*s=%ld", sep, static_cast<int>(word.size()), word.data(), n);
      sep = " ";
    }
    std::printf("\n");
    tx.commit();
  } catch (const qs::error& e) {
    std::fprintf(stderr, "word_count: %s\n", e.what());
    return 1;
  }
}
