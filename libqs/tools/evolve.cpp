// qs-evolve: converts a database to a program's types, offline.
//
//   qs-evolve DB --program BINARY [--dry-run]
//
// Reads the types of BINARY (a program built with qs_add_schema: schema-gen
// puts its descriptors, as text, in the section .qs_schema), prints what
// converting the embedded database DB to them would change, and converts it
// as the program would with qs::options::evolve (qs/evolve.hpp), unless
// --dry-run. A type that needs the program's own converter is refused: open
// the database from the program with options::evolve and its converters.
//
// Exit status: 0 converted (or nothing to convert, or a dry run), 2 usage,
// 3 refused or failed (the message on standard error; the database is as it
// was).
#include <qs/database.hpp>
#include <qs/error.hpp>

#include <qs/cli/cli.hpp>
#include <qs/format/members.hpp>

#include <elf.h>

#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

// The bytes of section .qs_schema of the ELF file at `path`; every offset
// checked against the file (it may be anything).
std::string schema_section(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw qs::invalid_argument("qs-evolve: cannot read " + path);
  std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto bad = [&](const std::string& what) { return qs::invalid_argument("qs-evolve: " + path + " " + what); };
  Elf64_Ehdr eh;
  if (file.size() < sizeof eh) throw bad("is not a 64-bit little-endian ELF file");
  std::memcpy(&eh, file.data(), sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB)
    throw bad("is not a 64-bit little-endian ELF file");
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > file.size() ||
      std::uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr) > file.size() - eh.e_shoff || eh.e_shstrndx >= eh.e_shnum)
    throw bad("has a damaged section table");
  auto section = [&](std::size_t i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, file.data() + eh.e_shoff + i * sizeof sh, sizeof sh);
    if (sh.sh_type != SHT_NOBITS && (sh.sh_offset > file.size() || sh.sh_size > file.size() - sh.sh_offset))
      throw bad("has a section outside the file");
    return sh;
  };
  Elf64_Shdr names = section(eh.e_shstrndx);
  for (std::size_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh = section(i);
    if (sh.sh_name >= names.sh_size) continue;
    std::string_view name(file.data() + names.sh_offset + sh.sh_name,
                          strnlen(file.data() + names.sh_offset + sh.sh_name, names.sh_size - sh.sh_name));
    if (name == ".qs_schema" && sh.sh_type != SHT_NOBITS) return file.substr(sh.sh_offset, sh.sh_size);
  }
  throw bad("has no qs schema (section .qs_schema): build it with qs_add_schema");
}

// Descriptors read from the section's text, with the storage they point to.
struct program_types {
  struct owned {
    std::string name, members;  // members: their lines, to compare duplicates
    std::vector<qs::detail::stored_member> stored;
    std::vector<qs::member_record> records;
    std::vector<std::uint32_t> pointers;
    std::vector<qs::vptr_entry> vptrs;
    std::string vtable_name;
    qs::type_descriptor d{};
  };
  std::deque<owned> types;
};

void parse(const std::string& path, const std::string& section, program_types& out) {
  std::map<std::string, std::string> seen;  // name -> its text, for duplicates
  auto bad = [&](const std::string& what) {
    return qs::invalid_argument("qs-evolve: the qs schema of " + path + " is damaged: " + what);
  };
  std::size_t at = 0;
  while (at < section.size()) {
    std::size_t end = section.find('\0', at);
    if (end == std::string::npos) end = section.size();
    std::istringstream in(section.substr(at, end - at));
    at = end + 1;
    std::string line;
    if (!std::getline(in, line)) continue;  // alignment padding between files
    if (line != "qs-schema 2")
      throw bad("a block starts with '" + line.substr(0, 40) +
                "' where this qs-evolve reads 'qs-schema 2' (build the program with this qs)");
    while (std::getline(in, line)) {
      if (line.rfind("type ", 0) != 0) throw bad("'" + line + "' where a type was expected");
      program_types::owned t;
      t.name = line.substr(5);
      auto field = [&](const char* key) {
        if (!std::getline(in, line) || line.rfind(key, 0) != 0) throw bad("type " + t.name + " lacks '" + key + "'");
        return line.substr(std::strlen(key));
      };
      auto numbers = [&](const std::string& s) {
        std::vector<std::uint32_t> v;
        std::istringstream ns(s);
        for (long long x; ns >> x;) {
          if (x < 0 || x > 0x7fffffff) throw bad("type " + t.name + " has a number out of range");
          v.push_back(static_cast<std::uint32_t>(x));
        }
        return v;
      };
      std::vector<std::uint32_t> size = numbers(field("size")), align = numbers(field("align"));
      if (size.size() != 1 || align.size() != 1) throw bad("type " + t.name + " has no size or alignment");
      t.pointers = numbers(field("pointers"));
      std::vector<std::uint32_t> vptrs = numbers(field("vptrs"));
      std::vector<std::uint32_t> count = numbers(field("members"));
      if (count.size() != 1) throw bad("type " + t.name + " has no member count");
      for (std::uint32_t i = 0; i < count[0]; ++i) {
        if (!std::getline(in, line)) throw bad("type " + t.name + " ends early");
        try {
          t.stored.push_back(qs::detail::decode_member(line));
        } catch (const qs::corrupt_page& e) {
          throw bad("type " + t.name + ": " + e.what());
        }
        t.members += line + "\n";
      }
      if (!std::getline(in, line) || line != "end") throw bad("type " + t.name + " does not end with 'end'");
      for (std::uint32_t off : t.pointers)
        if (off % 8 || std::uint64_t{off} + 8 > size[0]) throw bad("type " + t.name + " has a pointer outside it");
      t.vtable_name = "vtable of " + t.name;
      for (std::uint32_t off : vptrs) {
        if (off % 8 || std::uint64_t{off} + 8 > size[0]) throw bad("type " + t.name + " has a vptr outside it");
        t.vptrs.push_back({off, nullptr, 0, nullptr});
      }
      std::string text = std::to_string(size[0]) + "/" + std::to_string(align[0]) + "/" + t.members;
      auto [it, fresh] = seen.emplace(t.name, text);
      if (!fresh) {
        if (it->second != text) throw bad("type " + t.name + " has two different layouts");
        continue;
      }
      program_types::owned& o = out.types.emplace_back(std::move(t));
      for (auto& v : o.vptrs) v.vtable_name = o.vtable_name.c_str();
      for (const auto& m : o.stored)
        o.records.push_back({m.kind, m.number, m.offset, m.size, m.count, m.element_size, m.first_bit, m.bit_count,
                             m.path.c_str(), m.type.c_str(), m.element.c_str()});
      o.d = qs::type_descriptor{o.name.c_str(),
                                size[0],
                                align[0],
                                o.pointers.empty() ? nullptr : o.pointers.data(),
                                static_cast<std::uint32_t>(o.pointers.size()),
                                o.vptrs.empty() ? nullptr : o.vptrs.data(),
                                static_cast<std::uint32_t>(o.vptrs.size()),
                                o.records.empty() ? nullptr : o.records.data(),
                                static_cast<std::uint32_t>(o.records.size())};
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string db, program;
  bool dry_run = false;
  qs::cli::app app(
      "Converts the embedded qs database DB to the types of BINARY, a program built with\n"
      "qs_add_schema, as the program would with qs::options::evolve; prints what it\n"
      "changes. Exit status: 0 converted (or nothing to convert, or a dry run), 2 usage,\n"
      "3 refused or failed (the database is then as it was).\n",
      "qs-evolve");
  app.add_option("DB", db, "the database directory")->type_name("")->required();
  app.add_option("--program", program, "the program whose types the database gets")->type_name("BINARY")->required();
  app.add_flag("--dry-run", dry_run, "print what would change; write nothing");
  app.final_check([&] {
    if (db.empty()) throw qs::cli::usage_error("DB", "expected a database directory, got ''");
    if (program.empty()) throw qs::cli::usage_error("--program", "expected a program file, got ''");
  });
  if (auto status = app.parse(argc, argv)) return *status;
  try {
    program_types types;
    parse(program, schema_section(program), types);
    for (const auto& t : types.types) qs::detail::note_registered(&t.d);
    std::vector<std::string> plan = qs::evolution_plan(db);
    if (plan.empty()) {
      std::printf("qs-evolve: database %s already has the types of %s: nothing to convert\n", db.c_str(),
                  program.c_str());
      return 0;
    }
    for (const std::string& line : plan) std::printf("%s\n", line.c_str());
    if (dry_run) {
      std::printf("qs-evolve: dry run: nothing was written\n");
      return 0;
    }
    std::fflush(stdout);
    qs::options opts;
    opts.evolve = true;
    qs::database::open(db, opts);  // converts, and says so on standard error
    std::printf("qs-evolve: database %s now has the types of %s\n", db.c_str(), program.c_str());
  } catch (const qs::error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 3;
  }
  return 0;
}
