// qs-inspect: looks inside a database without the program that made it.
//
//   qs-inspect DB stat | roots | schema | page N | object ADDRESS | verify | dump | backup DEST
//   qs-inspect NEWDB load FILE [--page-size BYTES]
//
// DB is an embedded database's directory or a page server's URL (qs://
// HOST:PORT with --secret-file or QS_SECRET, qs+unix://PATH). The types come
// from the database's stored schema (qs/inspect.hpp). This program reads one
// swizzling mode's databases; for the other mode's it runs its sibling
// (qs-inspect-software beside qs-inspect, and the other way round) with the
// same arguments.
//
// stat, verify, dump, load and backup show their progress on standard error
// when it is a terminal, and nothing extra otherwise. dump writes the dump
// on standard output (docs/tools.md, "The dump format").
//
// Exit status: 0 done (verify: nothing wrong), 1 verify found problems (one
// line each on standard output), 2 usage, 3 the database could not be read
// (the message on standard error).
#include <qs/inspect.hpp>

#include <qs/cli/cli.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace {

// A progress bar on standard error when it is a terminal; nothing when not.
qs::inspector::progress bar(const char* what, const char* unit = "pages") {
  if (!isatty(STDERR_FILENO)) return {};
  return [what, unit, last = -1](std::uint64_t done, std::uint64_t total) mutable {
    int pct = total ? static_cast<int>(done * 100 / total) : 100;
    if (pct == last) return;
    last = pct;
    std::fprintf(stderr, "\r%s: %3d%% (%llu of %llu %s)", what, pct, static_cast<unsigned long long>(done),
                 static_cast<unsigned long long>(total), unit);
    if (done >= total) std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  };
}

// Runs the build of the other mode, beside this program, with our arguments.
[[noreturn]] void run_other(const qs::other_mode& e, char** argv) {
  const std::string me = "qs-inspect", other = "qs-inspect-software";
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string dir = n > 0 ? std::string(self, static_cast<std::size_t>(n)) : std::string(argv[0]);
  dir = dir.substr(0, dir.rfind('/') + 1);
  const std::string target = dir + (e.mode() == "software" ? other : me);
  if (std::getenv("QS_INSPECT_OTHER")) {  // the sibling sent us back: it is not there or not the other mode
    std::fprintf(stderr, "qs-inspect: %s\n", e.what());
    std::exit(3);
  }
  setenv("QS_INSPECT_OTHER", "1", 1);
  execv(target.c_str(), argv);
  std::fprintf(stderr, "qs-inspect: %s, and %s cannot be run\n", e.what(), target.c_str());
  std::exit(3);
}

}  // namespace

int main(int argc, char** argv) {
  std::string db, secret_file, address;
  std::uint64_t page = 0;
  qs::cli::app app(
      "Looks inside a qs database (a directory, or a page server's qs:// or qs+unix:// URL) without\n"
      "the program that made it; writes nothing. Exit status: 0 done, 1 verify found problems,\n"
      "2 usage, 3 the database could not be read.\n",
      "qs-inspect");
  app.add_option("DB", db, "the database directory or URL")->type_name("")->required();
  app.add_option("--secret-file", secret_file, "the page server's shared secret (qs://), else QS_SECRET")
      ->type_name("FILE");
  app.require_subcommand(1);
  qs::cli::command* stat = app.add_subcommand("stat",
                                              "format, pages, objects and bytes by type, free space, roots, "
                                              "indexes, log, schema");
  qs::cli::command* roots = app.add_subcommand("roots", "the named roots, their types and cells");
  qs::cli::command* schema = app.add_subcommand("schema", "the stored types, their members and earlier layouts");
  qs::cli::command* page_cmd = app.add_subcommand("page", "a page: its header, objects, pointer words, mapping object");
  page_cmd->add_option("N", page, "the page number")->check(qs::cli::whole(1, std::uint64_t{1} << 40))->required();
  qs::cli::command* object = app.add_subcommand("object", "an object's type and members by name");
  object->add_option("ADDRESS", address, "0x... (an address at the database's preferred base) or PAGE:OFFSET")
      ->required();
  qs::cli::command* verify = app.add_subcommand("verify",
                                                "checks every page, pointer, mapping object, free-space record, "
                                                "root and index entry; one line per problem");
  qs::cli::command* dump = app.add_subcommand("dump", "the object graph as JSON Lines, on standard output");
  std::string dump_file;
  std::uint32_t load_page_size = 0;
  qs::cli::command* load = app.add_subcommand("load", "reads a dump into DB, a new database");
  load->add_option("FILE", dump_file, "the dump (- for standard input)")->required();
  load->add_option("--page-size", load_page_size, "the new database's page size (default: the dump's)")
      ->type_name("BYTES")
      ->check(qs::cli::whole(4096, 65536));
  std::string target;
  qs::cli::command* backup = app.add_subcommand("backup", "a consistent copy of the database, live or not, into DEST");
  backup->add_option("DEST", target, "a new directory (through a page server: a name under its --backup-dir)")
      ->required();
  if (auto status = app.parse(argc, argv)) return *status;
  try {
    qs::options opts;
    if (!secret_file.empty()) {
      std::ifstream in(secret_file);
      if (!in) throw qs::invalid_argument("cannot read the secret file " + secret_file);
      opts.server_secret.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      while (!opts.server_secret.empty() && (opts.server_secret.back() == '\n' || opts.server_secret.back() == '\r'))
        opts.server_secret.pop_back();
    }
    if (*load) {
      auto t0 = std::chrono::steady_clock::now();
      std::ifstream file;
      if (dump_file != "-") {
        file.open(dump_file);
        if (!file) throw qs::invalid_argument("cannot read the dump " + dump_file);
      }
      std::uint64_t n =
          qs::load_dump(dump_file == "-" ? std::cin : file, db, opts, load_page_size, bar("load", "objects"));
      std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
      std::fprintf(stderr, "qs-inspect: loaded %llu objects into %s in %.3f s\n", static_cast<unsigned long long>(n),
                   db.c_str(), took.count());
      return 0;
    }
    qs::inspector in(db, opts);
    if (*stat) in.stat(std::cout, bar("stat"));
    if (*roots) in.roots(std::cout);
    if (*schema) in.schema(std::cout);
    if (*page_cmd) in.page(page, std::cout);
    if (*object) in.object(address, std::cout);
    if (*dump) {
      auto t0 = std::chrono::steady_clock::now();
      std::ios::sync_with_stdio(false);
      std::uint64_t n = in.dump(std::cout, bar("dump"));
      std::cout << std::flush;
      std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
      std::fprintf(stderr, "qs-inspect: dumped %llu objects in %.3f s\n", static_cast<unsigned long long>(n),
                   took.count());
    }
    if (*backup) {
      auto t0 = std::chrono::steady_clock::now();
      in.backup(target, bar("backup", "bytes"));
      std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
      std::printf("qs-inspect: backed up %s into %s in %.3f s\n", db.c_str(), target.c_str(), took.count());
    }
    if (*verify) {
      std::uint64_t problems = in.verify([](const std::string& line) { std::cout << line << "\n"; }, bar("verify"));
      std::cout << std::flush;
      std::fprintf(stderr, "qs-inspect: %s: %llu problem%s found\n", db.c_str(),
                   static_cast<unsigned long long>(problems), problems == 1 ? "" : "s");
      return problems ? 1 : 0;
    }
  } catch (const qs::other_mode& e) {
    run_other(e, argv);
  } catch (const qs::error& e) {
    std::fprintf(stderr, "qs-inspect: %s\n", e.what());
    return 3;
  }
  return 0;
}
