// qs_pageserver_bench: what a page costs through qs-pageserver, measured in
// one run beside the embedded store and a bare round trip of the same size,
// and commit throughput of 1, 2, 4 and 8 client processes on disjoint and on
// shared pages.
//
//   qs_pageserver_bench [PAGES] [SECONDS]      (defaults 2000 pages, 2 s per client count)
//
// (`qs_pageserver_bench client URL WORKLOAD ID SECONDS` is one of its own
// client processes; it starts them itself. `qs_pageserver_bench counters
// URL` makes their counters in a database served elsewhere: scripts/replication
// runs the clients against replication groups.)
//
// It starts its own qs-pageserver (loopback TCP, a temporary directory) and
// prints:
//  * cold read fault, embedded: the page comes from Berkeley DB in-process;
//  * cold read fault, remote: the page comes from the server over TCP;
//  * a cached page, remote: a page cached from an earlier transaction,
//    first touched in a new one (no other client changed it: the server
//    would have sent an invalidation, so nothing is asked);
//  * bare round trips to the same server over loopback TCP, on a wire
//    connection of the benchmark's own (wire/), of the sizes a fault and a
//    revalidation exchange: ping messages, without qs;
//  * write fault, embedded and remote: the first write in a transaction to
//    a page already resident and read in it (remote too, it asks nothing of
//    the server: the commit checks for conflicts);
//  * commits per second of N clients in db.run transactions (durable
//    commits), on disjoint pages (each client increments its own counter)
//    and on shared pages (each transaction reads a common page and
//    increments one of 4 shared counters, chosen at random), and allocating
//    (each transaction also allocates a small object, linked from the
//    client's own counter: clients compete for free space), and
//    read-mostly (each transaction reads 50 random pages of the list, which
//    the client cached in its first transaction, and 1% or 10% of them
//    increment one), with the
//    conflicts per commit: (attempts - commits) / commits, where an attempt
//    is a run of the transaction's body, and the commits per log flush of
//    the server (durable commits of concurrent clients share a flush:
//    Berkeley DB's group commit).
#include <qs/qs.hpp>

#include <qs/cli/cli.hpp>
#include <qs/wire/connection.hpp>
#include <qs/wire/messages.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

// A small object of the allocating workload.
struct Note {
  QS_PERSISTENT(Note)
  std::int64_t value;
  Note* next;
};

struct Slab {
  QS_PERSISTENT(Slab)
  std::int64_t value;
  Slab* next;
  Note* notes;
  std::int64_t pad[599];  // one Slab per 8 KiB page
};
constexpr std::uint32_t slab_pointers[] = {8, 16};
const qs::member_record slab_members[] = {
    {qs::member_kind::number, qs::number_kind::sint, 0, 8, 1, 8, 0, 0, "value", "long", ""},
    {qs::member_kind::pointer, qs::number_kind::none, 8, 8, 1, 8, 0, 0, "next", "bench::Slab*", "bench::Slab"},
    {qs::member_kind::pointer, qs::number_kind::none, 16, 8, 1, 8, 0, 0, "notes", "bench::Note*", "bench::Note"},
    {qs::member_kind::array, qs::number_kind::sint, 24, 4792, 599, 8, 0, 0, "pad", "long[599]", "long"},
};
const qs::type_descriptor slab_desc{
    "bench::Slab", sizeof(Slab), alignof(Slab), slab_pointers, 2, nullptr, 0, slab_members, 4};
constexpr std::uint32_t note_pointers[] = {8};
const qs::member_record note_members[] = {
    {qs::member_kind::number, qs::number_kind::sint, 0, 8, 1, 8, 0, 0, "value", "long", ""},
    {qs::member_kind::pointer, qs::number_kind::none, 8, 8, 1, 8, 0, 0, "next", "bench::Note*", "bench::Note"},
};
const qs::type_descriptor note_desc{
    "bench::Note", sizeof(Note), alignof(Note), note_pointers, 1, nullptr, 0, note_members, 2};
const bool registered = [] {
  qs::register_type<Slab>(slab_desc);
  qs::register_type<Note>(note_desc);
  return true;
}();

// A connection to the server that speaks the protocol itself: for bare round
// trips, with no qs runtime in between.
class wire_client {
 public:
  wire_client(int port, const std::string& secret)
      : conn_(qs::wire::connect_tcp({"127.0.0.1", static_cast<std::uint16_t>(port)})) {
    call(qs::wire::hello_request{qs::wire::magic, qs::wire::version, secret});
  }
  // One ping whose frames have the sizes of `out` and `back` (as near as a
  // ping's own fields allow).
  void round_trip(const qs::wire::request& out, const qs::wire::response& back) {
    std::size_t out_body = body_size(out), back_body = body_size(back);
    payload_.assign(out_body > 9 ? out_body - 9 : 0, 'p');  // type, length, payload, reply_bytes
    call(qs::wire::ping_request{payload_, static_cast<std::uint32_t>(back_body > 5 ? back_body - 5 : 0)});
  }
  template <class M>
  static std::size_t body_size(const M& m) {
    qs::wire::writer w;
    qs::wire::encode(m, w);
    return w.body_size();
  }

 private:
  void call(const qs::wire::request& r) {
    qs::wire::writer w;
    qs::wire::encode(r, w);
    conn_.send(w.finish());
    if (!conn_.receive(in_, qs::wire::max_message)) throw qs::error("the server closed the connection");
    auto resp = qs::wire::parse_response(in_);
    if (auto* e = std::get_if<qs::wire::error_response>(&resp)) throw qs::error(std::string(e->text));
  }
  qs::wire::connection conn_;
  std::vector<std::byte> in_;
  std::string payload_;
};

using clock_type = std::chrono::steady_clock;
double since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

qs::options bench_options() {
  qs::options o;
  o.pool_pages = 8192;
  o.reservation_bytes = std::uint64_t{4} << 30;
  o.durable = false;
  return o;
}

void build(qs::database& db, int pages) {
  for (int done = 0; done < pages;) {
    qs::transaction tx(db);
    auto& head = db.root<Slab*>("list");
    for (int i = 0; i < 500 && done < pages; ++i, ++done) head = new (db) Slab{done, head, nullptr, {}};
    tx.commit();
  }
}

// Seconds per page for a walk of the list, in a transaction of its own.
double walk(qs::database& db, int pages) {
  qs::transaction tx(db);
  auto t0 = clock_type::now();
  std::int64_t sum = 0;
  int n = 0;
  for (Slab* s = db.root<Slab*>("list"); s; s = s->next, ++n) sum += s->value;
  double t = since(t0);
  tx.commit();
  if (n != pages)
    std::fprintf(stderr, "walked %d pages, expected %d (sum %lld)\n", n, pages, static_cast<long long>(sum));
  return t / n;
}

// Seconds per write fault: in one transaction, a pass over the list that
// reads every page (faulting it in, or revalidating it), then a timed pass
// that writes each page once. Two such transactions; the first warms the
// before-image memory, the second is measured.
double write_fault(qs::database& db, int pages) {
  double t = 0;
  std::int64_t sum = 0;
  std::vector<Slab*> slabs;
  slabs.reserve(static_cast<std::size_t>(pages));
  for (int round = 0; round < 2; ++round) {
    qs::transaction tx(db);
    slabs.clear();
    for (Slab* s = db.root<Slab*>("list"); s; s = s->next) {
      sum += s->value;
      slabs.push_back(s);
    }
    std::uint64_t before = db.stats().write_faults;
    auto t0 = clock_type::now();
    for (Slab* s : slabs) s->pad[0] += 1;
    t = since(t0) / static_cast<double>(slabs.size());
    std::uint64_t faults = db.stats().write_faults - before;
    tx.commit();
    if (slabs.size() != static_cast<std::size_t>(pages) || faults != slabs.size())
      std::fprintf(stderr, "wrote %zu pages (%llu write faults), expected %d (sum %lld)\n", slabs.size(),
                   static_cast<unsigned long long>(faults), pages, static_cast<long long>(sum));
  }
  return t;
}

int spawn(const std::vector<std::string>& argv, const std::string& err) {
  std::vector<std::string> copy(argv);
  std::vector<char*> args;
  for (auto& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  int pid = -1;
  if (posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ) != 0) throw std::runtime_error("spawn " + argv[0]);
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

constexpr int max_clients = 8;
constexpr int shared_counters = 4;

std::string own_counter(int id) { return "counter" + std::to_string(id); }
std::string shared_counter(int k) { return "shared" + std::to_string(k); }
const char* const common_page = "common";

// Creates the counters of the throughput measurement, each a Slab (a page of
// its own): one for each client of the disjoint workload, the shared ones
// and the common page of the shared workload.
void create_counters(const std::string& url) {
  auto db = qs::database::open(url, bench_options());
  db.run([&] {
    auto make = [&](const std::string& name) {
      auto& c = db.root<Slab*>(name);
      if (!c) c = new (db) Slab{};
    };
    for (int i = 0; i < max_clients; ++i) make(own_counter(i));
    for (int k = 0; k < shared_counters; ++k) make(shared_counter(k));
    make(common_page);
  });
}

constexpr int read_mostly_pages = 50;

// The read-mostly workload's client (see client()): prints what client()
// prints.
int read_mostly(qs::database& db, int write_percent, int id, double seconds) {
  long commits = 0, attempts = 0, gave_up = 0;
  std::vector<Slab*> slabs;
  db.run([&] {
    slabs.clear();
    for (Slab* s = db.root<Slab*>("list"); s; s = s->next) slabs.push_back(s);
  });
  if (slabs.empty()) throw qs::error("no list");
  std::minstd_rand rng(static_cast<unsigned>(id) * 7919u + static_cast<unsigned>(::getpid()));
  volatile std::int64_t seen = 0;
  auto t0 = clock_type::now();
  while (since(t0) < seconds) {
    std::size_t picks[read_mostly_pages];
    for (auto& p : picks) p = rng() % slabs.size();
    const bool writes = static_cast<int>(rng() % 100) < write_percent;
    try {
      db.run([&] {
        ++attempts;
        std::int64_t sum = 0;
        for (std::size_t p : picks) sum += slabs[p]->value;
        seen = sum;
        if (writes) slabs[picks[0]]->value += 1;
      });
      ++commits;
    } catch (const qs::error& e) {
      if (++gave_up == 1) std::fprintf(stderr, "client %d (read-mostly): a transaction gave up: %s\n", id, e.what());
    }
  }
  std::printf("%ld %ld %ld %d\n", commits, attempts, gave_up, 0);
  return 0;
}

// A client process of the throughput measurement. For `seconds` it runs
// transactions (db.run) that each increment a counter: with workload
// "disjoint", its own counter `id` (with "allocating", also linking a new
// Note from it); with "shared", one of the shared
// counters chosen at random, after reading the common page. It prints its
// commits, its attempts (runs of the transaction's body, each retry after a
// conflict included), the transactions that gave up (a qs::error out of
// db.run, such as a deadlock on the last attempt) and whether an error ended
// it early (0 or 1), then the median and 99th percentile of its
// transactions' latency in microseconds (a db.run, its retries included).
// It goes on after a transaction that gave up, and exits
// normally whatever is thrown; the first of each kind of error goes to
// stderr.
int client(const std::string& url, const std::string& workload, int id, double seconds) {
  long commits = 0, attempts = 0, gave_up = 0, ended = 0;
  std::vector<double> latency;
  try {
    auto db = qs::database::open(url, [] {
      qs::options o = bench_options();
      o.durable = true;
      return o;
    }());
    const bool shared = workload == "shared", allocating = workload == "allocating";
    // read-mostly-P: a transaction reads read_mostly_pages pages of the
    // list at random and, P% of the time, increments one of them.
    const int write_percent = workload == "read-mostly-1" ? 1 : workload == "read-mostly-10" ? 10 : -1;
    if (!shared && !allocating && write_percent < 0 && workload != "disjoint")
      throw qs::error("unknown workload " + workload);
    if (write_percent >= 0) return read_mostly(db, write_percent, id, seconds);
    const std::string own = own_counter(id);
    std::vector<std::string> names;
    for (int k = 0; k < shared_counters; ++k) names.push_back(shared_counter(k));
    // The counters are found once: a program keeps its pointers (reading
    // a root in every transaction would read the page its cell is on,
    // which may hold another client's counter).
    std::vector<Slab*> counters;
    Slab* common = nullptr;
    db.run([&] {
      counters.clear();
      for (const std::string& n : shared ? names : std::vector<std::string>{own}) {
        counters.push_back(db.root<Slab*>(n));
        if (!counters.back()) throw qs::error("no counter " + n);
      }
      if (shared && !(common = db.root<Slab*>(common_page))) throw qs::error("no common page");
    });
    std::minstd_rand rng(static_cast<unsigned>(id) * 7919u + static_cast<unsigned>(::getpid()));
    volatile std::int64_t seen = 0;
    auto t0 = clock_type::now();
    while (since(t0) < seconds) {
      Slab* counter = counters[shared ? rng() % shared_counters : 0];
      try {
        const auto began = clock_type::now();
        db.run([&] {
          ++attempts;
          if (shared) seen = common->value;
          if (allocating) counter->notes = new (db) Note{counter->value, counter->notes};
          counter->value += 1;
        });
        latency.push_back(since(began) * 1e6);
        ++commits;
      } catch (const qs::error& e) {
        if (++gave_up == 1)
          std::fprintf(stderr, "client %d (%s): a transaction gave up: %s\n", id, workload.c_str(), e.what());
      }
    }
  } catch (const std::exception& e) {
    ended = 1;
    std::fprintf(stderr, "client %d (%s): %s\n", id, workload.c_str(), e.what());
  } catch (...) {
    ended = 1;
    std::fprintf(stderr, "client %d (%s): an exception of unknown type\n", id, workload.c_str());
  }
  auto percentile = [&](double q) {
    if (latency.empty()) return 0.0;
    const auto k = static_cast<std::size_t>(q * static_cast<double>(latency.size() - 1));
    std::nth_element(latency.begin(), latency.begin() + static_cast<std::ptrdiff_t>(k), latency.end());
    return latency[k];
  };
  const double p50 = percentile(0.5), p99 = percentile(0.99);
  std::printf("%ld %ld %ld %ld %.0f %.0f\n", commits, attempts, gave_up, ended, p50, p99);
  return 0;
}

// The sums of the clients' reports, and the clients that reported nothing
// (killed, or crashed).
struct tally {
  long commits = 0, attempts = 0, gave_up = 0, ended = 0, silent = 0;
};

tally run_clients(const std::string& self, const std::string& url, const std::string& dir, const std::string& workload,
                  int clients, double seconds) {
  std::vector<std::pair<int, std::string>> procs;
  for (int i = 0; i < clients; ++i) {
    std::string out = dir + "/" + workload + std::to_string(clients) + "_" + std::to_string(i);
    int fds = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds, 1);
    std::vector<std::string> a{self, "client", url, workload, std::to_string(i), std::to_string(seconds)};
    std::vector<char*> args;
    for (auto& s : a) args.push_back(s.data());
    args.push_back(nullptr);
    int pid = -1;
    if (posix_spawn(&pid, self.c_str(), &fa, nullptr, args.data(), environ) != 0) pid = -1;
    posix_spawn_file_actions_destroy(&fa);
    ::close(fds);
    procs.emplace_back(pid, out);
  }
  tally t;
  for (auto& [pid, out] : procs) {
    int st = 0;
    if (pid > 0) ::waitpid(pid, &st, 0);
    std::ifstream in(out);
    long c = 0, a = 0, g = 0, e = 0;
    if (pid > 0 && (in >> c >> a >> g >> e)) {
      t.commits += c;
      t.attempts += a;
      t.gave_up += g;
      t.ended += e;
    } else {
      ++t.silent;
    }
  }
  return t;
}

// The server's log flushes so far: asked for with SIGUSR1, read from the
// statistics line it then logs ("N log flushes"); -1 when none came.
long log_flushes(int server, const std::string& log) {
  auto count_lines = [&] {
    std::ifstream in(log);
    long n = 0, last = -1;
    for (std::string line; std::getline(in, line);) {
      auto at = line.find(" log flushes (");
      if (at == std::string::npos) continue;
      ++n;
      auto from = line.rfind(' ', at - 1);
      last = std::atol(line.c_str() + from + 1);
    }
    return std::pair<long, long>(n, last);
  };
  static bool logs_them = true;  // (a server that does not is asked once)
  if (!logs_them) return -1;
  long before = count_lines().first;
  ::kill(server, SIGUSR1);
  for (int i = 0; i < 500; ++i) {
    auto [n, last] = count_lines();
    if (n > before) return last;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  logs_them = false;
  return -1;
}

void print_tally(int clients, const tally& t, double seconds, long flushes) {
  std::printf("  %d client%s %10.0f commits/s", clients, clients == 1 ? " " : "s",
              static_cast<double>(t.commits) / seconds);
  if (t.commits > 0)
    std::printf("  %8.3f conflicts/commit",
                static_cast<double>(t.attempts - t.commits) / static_cast<double>(t.commits));
  else std::printf("  %8s conflicts/commit", "-");
  std::printf("  %6ld gave up  (%ld commits, %ld attempts)", t.gave_up, t.commits, t.attempts);
  if (t.ended) std::printf("  %ld ended by an error", t.ended);
  if (t.silent) std::printf("  %ld reported nothing", t.silent);
  // Durable commits that shared a log flush (Berkeley DB's group commit).
  if (flushes > 0)
    std::printf("  %.2f commits/log flush", static_cast<double>(t.commits) / static_cast<double>(flushes));
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  int pages = 2000;
  double seconds = 2.0;
  qs::cli::app app(
      "What a page costs through qs-pageserver beside the embedded store and a bare round\n"
      "trip, and the commit throughput of 1, 2, 4 and 8 client processes.\n",
      "qs_pageserver_bench");
  // At most what bench_options()'s 4 GiB reservation holds, with room to spare.
  app.add_option("PAGES", pages, "pages of 8 KiB in the list walked, 1 to 400000 (default 2000)")
      ->type_name("")
      ->check(qs::cli::whole(1, 400000));
  app.add_option("SECONDS", seconds, "seconds per client count, 0.001 to 3600 (default 2)")
      ->type_name("")
      ->check(qs::cli::seconds(3600));
  std::string client_url, workload;
  int id = 0;
  double client_seconds = 0;
  qs::cli::command* as_client = app.add_subcommand("client", "")->group("");  // its own client processes
  as_client->add_option("URL", client_url)->required();
  as_client->add_option("WORKLOAD", workload)
      ->required()
      ->check(qs::cli::one_of({"disjoint", "shared", "allocating", "read-mostly-1", "read-mostly-10"}));
  as_client->add_option("ID", id)->required()->check(qs::cli::whole(0, max_clients - 1));
  as_client->add_option("SECONDS", client_seconds)->required()->check(qs::cli::seconds(3600));
  // The counters of the throughput clients, in a database served elsewhere
  // (scripts/replication).
  qs::cli::command* as_counters = app.add_subcommand("counters", "")->group("");
  as_counters->add_option("URL", client_url)->required();
  if (auto status = app.parse(argc, argv)) return *status;
  if (*as_client) return client(client_url, workload, id, client_seconds);
  if (*as_counters) {
    try {
      create_counters(client_url);
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "qs_pageserver_bench counters: %s\n", e.what());
      return 1;
    }
  }
  char tmpl[] = "/tmp/qs-psbench-XXXXXX";
  if (!::mkdtemp(tmpl)) return 1;
  std::string dir = tmpl;
  std::string secret_file = dir + "/secret";
  {
    int fd = ::open(secret_file.c_str(), O_WRONLY | O_CREAT, 0600);
    (void)!::write(fd, "bench-secret\n", 13);
    ::close(fd);
  }
  ::setenv("QS_SECRET", "bench-secret", 1);
  int server = spawn({QS_PAGESERVER, "--dir", dir + "/served", "--tcp", "127.0.0.1:0", "--secret-file", secret_file,
                      "--ready-file", dir + "/ready"},
                     dir + "/server.log");
  int port = 0;
  for (int i = 0; i < 1000 && !port; ++i) {
    std::ifstream in(dir + "/ready");
    if (!(in >> port)) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::string url = "qs://127.0.0.1:" + std::to_string(port);
  int rc = 0;
  try {
    if (!port) throw qs::error("the server did not start; see " + dir + "/server.log");
    std::printf("qs-pageserver benchmark: %d pages of 8 KiB, loopback TCP (%s)\n\n", pages, url.c_str());
    double embedded, remote, revalidate, embedded_write, remote_write, rtt_page, rtt_small;
    std::pair<std::size_t, std::size_t> fault_sizes, check_sizes;  // bytes out, back
    // Each walk after a fresh open: the process knows no page but the
    // roots, and gives each page its frame as the pointers to it come in.
    {
      auto db = qs::database::open(dir + "/embedded", bench_options());
      build(db, pages);
    }
    {
      auto db = qs::database::open(dir + "/embedded", bench_options());
      embedded = walk(db, pages);
      embedded_write = write_fault(db, pages);
    }
    {
      auto db = qs::database::open(url, bench_options());
      build(db, pages);
    }
    {
      auto db = qs::database::open(url, bench_options());
      remote = walk(db, pages);
      revalidate = walk(db, pages);  // cached, in a new transaction: nobody changed them
      remote_write = write_fault(db, pages);
    }
    {
      // What a fault and a revalidation send and receive.
      std::string record(8192 + 48, 'r');
      const qs::wire::request fault = qs::wire::read_page_request{1, {}};
      const qs::wire::response page = qs::wire::page_response{qs::wire::page_status::record, record, {}};
      const qs::wire::request check = qs::wire::read_page_request{1, 1};
      const qs::wire::response unchanged = qs::wire::page_response{qs::wire::page_status::unchanged, {}, {}};
      fault_sizes = {wire_client::body_size(fault) + 4, wire_client::body_size(page) + 4};
      check_sizes = {wire_client::body_size(check) + 4, wire_client::body_size(unchanged) + 4};
      wire_client c(port, "bench-secret");
      const int n = 2000;
      auto t0 = clock_type::now();
      for (int i = 0; i < n; ++i) c.round_trip(fault, page);
      rtt_page = since(t0) / n;
      t0 = clock_type::now();
      for (int i = 0; i < n; ++i) c.round_trip(check, unchanged);
      rtt_small = since(t0) / n;
    }
    std::printf("%-52s %9.1f us\n", "cold read fault, embedded (Berkeley DB in-process)", embedded * 1e6);
    std::printf("%-52s %9.1f us  (%.1fx embedded)\n", "cold read fault, remote (page over TCP)", remote * 1e6,
                remote / embedded);
    std::string label = "bare round trip, " + std::to_string(fault_sizes.first) + " B out, " +
                        std::to_string(fault_sizes.second) + " B back";
    std::printf("%-52s %9.1f us\n", label.c_str(), rtt_page * 1e6);
    std::printf("%-52s %9.1f us  (fault = %.2fx bare round trip)\n", "  remote fault minus bare round trip",
                (remote - rtt_page) * 1e6, remote / rtt_page);
    std::printf("%-52s %9.1f us\n", "  remote fault minus (round trip + embedded fault)",
                (remote - rtt_page - embedded) * 1e6);
    std::printf("%-52s %9.1f us\n", "cached page, first touch in a new transaction, remote", revalidate * 1e6);
    label = "bare round trip, " + std::to_string(check_sizes.first) + " B out, " + std::to_string(check_sizes.second) +
            " B back";
    std::printf("%-52s %9.1f us  (the cached page = %.2fx bare round trip)\n", label.c_str(), rtt_small * 1e6,
                revalidate / rtt_small);
    std::printf("%-52s %9.1f us\n", "write fault, embedded (resident page, read first)", embedded_write * 1e6);
    std::printf("%-52s %9.1f us  (%.1fx embedded, %.2fx the small round trip)\n\n",
                "write fault, remote (local: no round trip)", remote_write * 1e6, remote_write / embedded_write,
                remote_write / rtt_small);

    std::printf(
        "commit throughput (durable commits, %.1f s per client count; conflicts/commit = (attempts - commits) / "
        "commits):\n",
        seconds);
    char self[4096];
    ssize_t len = ::readlink("/proc/self/exe", self, sizeof self - 1);
    self[len > 0 ? len : 0] = 0;
    create_counters(url);
    const std::string log = dir + "/server.log";
    auto measure = [&](int clients, const char* which) {
      long f0 = log_flushes(server, log);
      tally t = run_clients(self, url, dir, which, clients, seconds);
      long f1 = log_flushes(server, log);
      print_tally(clients, t, seconds, f0 >= 0 && f1 >= 0 ? f1 - f0 : -1);
    };
    std::printf(" disjoint pages: each client increments its own counter page\n");
    for (int clients : {1, 2, 4, max_clients}) measure(clients, "disjoint");
    std::printf(
        " shared pages: each transaction reads a common page and increments one of %d counter pages, at random\n",
        shared_counters);
    for (int clients : {1, 2, 4, max_clients}) measure(clients, "shared");
    std::printf(
        " allocating: each transaction allocates a 16-byte object and links it from the client's own counter "
        "page\n");
    for (int clients : {1, 2, 4, max_clients}) measure(clients, "allocating");
    for (int percent : {1, 10}) {
      std::printf(
          " read-mostly, %d%% writes: each transaction reads %d of the %d pages at random (cached from the "
          "client's earlier transactions), and %d%% of them also increment one\n",
          percent, read_mostly_pages, pages, percent);
      std::string w = "read-mostly-" + std::to_string(percent);
      for (int clients : {1, 4, max_clients}) measure(clients, w.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qs_pageserver_bench: %s\n", e.what());
    rc = 1;
  }
  ::kill(server, SIGTERM);
  int st;
  ::waitpid(server, &st, 0);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return rc;
}
