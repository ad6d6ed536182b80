// make_corpus: writes the parser fuzzer's seed corpus (fuzz/corpus) from the
// protocol's own encoders, so that the seeds follow the message definitions.
//
//   qs_make_fuzz_corpus DIR      (the build target of the same name; not built by default)
//
// Each file is a stream of frames as a connection carries them: a
// conversation's worth of requests, every response type, and two framing
// failures (an oversized and a truncated frame).
#include <qs/wire/messages.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {

using namespace qs::wire;

struct stream {
  std::string bytes;
  template <class M>
  stream& operator<<(const M& m) {
    writer w;
    encode(m, w);
    const auto& f = w.finish();
    bytes.append(reinterpret_cast<const char*>(f.data()), f.size());
    return *this;
  }
};

void save(const std::string& dir, const std::string& name, const std::string& bytes) {
  std::ofstream out(dir + "/" + name, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + dir + "/" + name);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const hello_request hello{magic, version, "secret"};
  const std::string record(48 + 56, 'h');  // a record header and a short image
  const std::string mapping(48, 'm');      // two mapping entries

  save(dir, "hello", (stream() << request(hello)).bytes);
  save(dir, "begin_abort", (stream() << request(hello) << request(begin_request{}) << request(abort_request{})).bytes);
  {
    write_request w;
    w.pages.push_back({page_op_kind::put, 1, record, {}, mapping_change::set, mapping, 0});
    w.pages.push_back({page_op_kind::remove, 2, {}, {}, mapping_change::keep, {}, unchecked_version});
    w.metas.push_back({meta_op_kind::put, "r:root", "123 x"});
    save(dir, "write_put", (stream() << request(w)).bytes);
  }
  {
    commit_request c;
    c.durable = true;
    c.serializable = true;
    page_op patch{page_op_kind::patch, 7, {}, {}, mapping_change::keep, {}, 3};
    patch.parts.push_back({0, std::string_view(record).substr(0, 48)});
    patch.parts.push_back({100, "hhhh"});
    patch.mapping_op = mapping_change::remove;
    c.pages.push_back(patch);
    c.pages.push_back({page_op_kind::put, 8, record, {}, mapping_change::keep, {}, 1});
    c.pages.push_back({page_op_kind::put, 10, record, {}, mapping_change::set, mapping, 0});
    c.pages.push_back({page_op_kind::remove, 9, {}, {}, mapping_change::keep, {}, 2});
    c.reads.push_back({4, 12});
    c.reads.push_back({5, 0});
    c.metas.push_back({meta_op_kind::put, "r:root", "123 x"});
    c.metas.push_back({meta_op_kind::remove, std::string_view("s:\0\0\0\0\0\0\0\1", 10), {}});
    save(dir, "commit_patch", (stream() << request(hello) << request(begin_request{}) << request(c)).bytes);
  }
  save(dir, "read_page", (stream() << request(read_page_request{3, {}}) << request(read_page_request{3, 5})).bytes);
  save(dir, "read_pages",
       (stream() << request(read_pages_request{{3}}) << request(read_pages_request{{4, 9, 5}})).bytes);
  save(dir, "get_scan", (stream() << request(get_request{"page_size"}) << request(scan_request{"t:"})).bytes);
  save(dir, "allocate", (stream() << request(allocate_request{4})).bytes);
  save(dir, "index",
       (stream() << request(open_index_request{"by_id", true}) << request(index_insert_request{0, "k", "v"})
                 << request(index_erase_request{0, "k", "v"})
                 << request(index_scan_request{0, "a", "z", entry{"k", "v"}, 10})
                 << request(index_scan_request{0, "a", "z", {}, 0}))
           .bytes);
  save(dir, "log_ping", (stream() << request(log_position_request{}) << request(ping_request{"ping", 8232})).bytes);
  save(dir, "backup", (stream() << request(hello) << request(backup_request{"nightly"})).bytes);
  save(dir, "outcome",
       (stream() << request(hello) << request(outcome_request{{0x1800000000000000, 0x0123456789abcdef}})).bytes);
  {
    entries_response e;
    e.more = true;
    e.entries.push_back({"k", "v"});
    save(dir, "responses",
         (stream() << response(ok_response{}) << response(error_response{error_code::conflict, "conflict"})
                   << response(hello_ok_response{version})
                   << response(page_response{page_status::record, record, mapping})
                   << response(page_response{page_status::unchanged, {}, {}})
                   << response(page_response{page_status::absent, {}, {}}) << response(value_response{"v"})
                   << response(value_response{}) << response(e) << response(pages_response{2, 9})
                   << response(index_response{1}) << response(position_response{4096}) << response(flag_response{true})
                   << response(pong_response{"pp"}) << response(begun_response{{1, 2}})
                   << response(verdict_response{commit_outcome::committed})
                   << response(verdict_response{commit_outcome::pending})
                   << response(records_response{{{3, record, mapping}, {9, record, {}}}, true})
                   << response(records_response{{{5, record, {}}}, false}))
             .bytes);
  }
  save(dir, "oversized", std::string("\xf0\xff\xff\xff\x78", 5));
  save(dir, "truncated", std::string("\x64\x00\x00\x00\x02", 5));
  return 0;
}
