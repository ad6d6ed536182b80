#include "core/schema_registry.hpp"

#include <qs/error.hpp>

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <sstream>

namespace qs::detail {
namespace {

constexpr std::uint32_t pointer_offsets[] = {0};
const member_record pointer_members[] = {
    {member_kind::opaque, number_kind::none, 0, 8, 1, 8, 0, 0, "value", "pointer", ""}};
const type_descriptor pointer_desc{"qs::pointer", 8, 8, pointer_offsets, 1, nullptr, 0, pointer_members, 1};
const type_descriptor raw_desc{"qs::raw", 1, 1, nullptr, 0, nullptr, 0, nullptr, 0};

std::mutex program_types_mutex;
std::vector<const type_descriptor*>& program_types() {
  static std::vector<const type_descriptor*> v;
  return v;
}

std::vector<std::string> lines(const std::vector<member_info>& ms) {
  std::vector<std::string> out;
  for (const member_info& m : ms) out.push_back(member_line(to_stored(m)));
  return out;
}

// The schema record formats: the one written, and the older one converted
// as it is read.
constexpr const char* type_format = "qs-type 2";
constexpr const char* text_type_format = "qs-type 1";

std::string join(const std::vector<std::uint32_t>& v) {
  std::string s;
  for (auto x : v) s += (s.empty() ? "" : " ") + std::to_string(x);
  return s;
}

// The most type indexes a database may hold: the registry keeps a table
// indexed by them.
constexpr std::uint32_t max_type_index = 1u << 24;

// Parses a stored layout ("t:" record); throws qs::corrupt_page naming the
// type and what is wrong. Every value is checked: the record may come from
// a damaged file or from any client of a page server.
type_layout parse(const std::string& v, std::uint32_t& index, const std::string& name) {
  auto bad = [&](const std::string& what) {
    return corrupt_page(0, "the schema record of type " + name + " is damaged: " + what);
  };
  type_layout l;
  l.name = name;
  std::istringstream in(v);
  std::string line, word;
  std::getline(in, line);
  const bool text_members = line == text_type_format;
  if (!text_members && line != type_format)
    throw bad("it is of format '" + line.substr(0, 40) + "'; this qs reads format '" + type_format +
              "' (and converts format '" + text_type_format + "' as it reads it)");
  bool have_index = false, have_size = false, have_align = false;
  auto number = [&](std::istringstream& ls, const char* what) {
    long long x = -1;
    if (!(ls >> x) || x < 0 || x > 0xffffffffll) throw bad(std::string("its ") + what + " is not a 32-bit number");
    return static_cast<std::uint32_t>(x);
  };
  auto offsets = [&](std::istringstream& ls, std::vector<std::uint32_t>& out, const char* what) {
    std::string x;
    while (ls >> x) {
      std::istringstream one(x);
      out.push_back(number(one, what));
    }
  };
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    if (!(ls >> word)) continue;
    if (word == "index") index = number(ls, "index"), have_index = true;
    else if (word == "size") l.size = number(ls, "size"), have_size = true;
    else if (word == "align") l.align = number(ls, "alignment"), have_align = true;
    else if (word == "pointers") offsets(ls, l.pointers, "pointer offset");
    else if (word == "vptrs") offsets(ls, l.vptrs, "vptr offset");
    else if (word == "members" && text_members) {
      std::string rest((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      try {
        l.members = convert_text_members(rest, name);
      } catch (const corrupt_page& e) {
        throw bad(e.what());
      }
      break;
    } else if (word == "members") {
      std::uint32_t n = number(ls, "member count");
      for (std::uint32_t i = 0; i < n; ++i) {
        if (!std::getline(in, line)) throw bad("it ends before its " + std::to_string(n) + " members");
        try {
          l.members.push_back(from_stored(decode_member(line)));
        } catch (const corrupt_page& e) {
          throw bad(e.what());
        }
      }
      if (std::getline(in, line) && !line.empty()) throw bad("it goes on after its members");
      break;
    } else {
      throw bad("unknown line '" + word + "'");
    }
  }
  if (!have_index || !have_size || !have_align) throw bad("its index, size or alignment is missing");
  if (index < first_stored_type || index >= max_type_index)
    throw bad("type index " + std::to_string(index) + " is outside " + std::to_string(first_stored_type) + " to " +
              std::to_string(max_type_index - 1));
  if (l.size == 0 || l.size > 0x7fffffffu) throw bad("a size of " + std::to_string(l.size) + " bytes");
  if (l.align == 0 || (l.align & (l.align - 1)) || l.align > 4096)
    throw bad("an alignment of " + std::to_string(l.align));
  for (const auto* words : {&l.pointers, &l.vptrs})
    for (std::uint32_t off : *words)
      if (off % 8 || std::uint64_t{off} + 8 > l.size)
        throw bad("a pointer or vptr at offset " + std::to_string(off) + " of a " + std::to_string(l.size) +
                  "-byte type");
  if ((!l.pointers.empty() || !l.vptrs.empty()) && l.size % 8)
    throw bad("a type with pointers whose size, " + std::to_string(l.size) + ", is not a multiple of 8");
  return l;
}

}  // namespace

const type_descriptor* pointer_descriptor() noexcept { return &pointer_desc; }
const type_descriptor* raw_descriptor() noexcept { return &raw_desc; }

std::string demangle(const char* mangled) {
  int status = 0;
  char* dem = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && dem ? dem : mangled;
  std::free(dem);
  return name;
}

void throw_no_schema(const std::type_info& t) {
  throw schema_error("type " + demangle(t.name()) +
                     " has no schema: build the program with qs_add_schema(<target>) so that schema-gen "
                     "describes it, or register a descriptor with qs::register_type");
}

void note_registered(const type_descriptor* d) {
  std::lock_guard<std::mutex> g(program_types_mutex);
  auto& v = program_types();
  if (std::find(v.begin(), v.end(), d) == v.end()) v.push_back(d);
}

type_layout layout_of(const type_descriptor* d) {
  type_layout l;
  l.name = d->name;
  l.size = d->size;
  l.align = d->align;
  l.pointers.assign(d->pointers, d->pointers + d->pointer_count);
  for (std::uint32_t i = 0; i < d->vptr_count; ++i) l.vptrs.push_back(d->vptrs[i].offset);
  l.members = members_of(*d);
  l.program = d;
  return l;
}

std::string serialize(const type_layout& l, std::uint32_t index) {
  std::string s = std::string(type_format) + "\nindex " + std::to_string(index) + "\nsize " + std::to_string(l.size) +
                  "\nalign " + std::to_string(l.align) + "\npointers " + join(l.pointers) + "\nvptrs " + join(l.vptrs) +
                  "\nmembers " + std::to_string(l.members.size());
  for (const member_info& m : l.members) s += "\n" + encode_member(to_stored(m));
  return s;
}

schema_registry::schema_registry(store& s) : store_(s) {
  layouts_.resize(first_stored_type);
  layouts_[pointer_type] = layout_of(&pointer_desc);
  layouts_[raw_type] = layout_of(&raw_desc);
  by_desc_[&pointer_desc] = pointer_type;
  by_desc_[&raw_desc] = raw_type;
}

void schema_registry::load() {
  store_.scan("t:", [&](std::string_view key, std::string_view value) {
    std::string name(key.substr(2));
    std::uint32_t index = 0;
    type_layout l = parse(std::string(value), index, name);
    if (index < layouts_.size() && !layouts_[index].name.empty() && layouts_[index].name != name)
      throw corrupt_page(0, "the schema records of types " + layouts_[index].name + " and " + name +
                                " both claim type index " + std::to_string(index));
    if (layouts_.size() <= index) layouts_.resize(index + 1);
    layouts_[index] = std::move(l);
    by_name_[name] = index;
  });
  // Earlier layouts of evolved types: their indexes stay taken.
  store_.scan("h:", [&](std::string_view key, std::string_view value) {
    std::string_view rest = key.substr(2);
    std::string name(rest.substr(0, rest.rfind('@')));
    std::uint32_t index = 0;
    type_layout l = parse(std::string(value), index, name);
    if (index < layouts_.size() && !layouts_[index].name.empty())
      throw corrupt_page(0, "an earlier layout of type " + name + " claims type index " + std::to_string(index) +
                                ", which type " + layouts_[index].name + " has");
    if (layouts_.size() <= index) layouts_.resize(index + 1);
    layouts_[index] = std::move(l);
  });
  std::vector<const type_descriptor*> mine;
  {
    std::lock_guard<std::mutex> g(program_types_mutex);
    mine = program_types();
  }
  pending_.clear();
  for (const type_descriptor* d : mine) {
    if (evolving_) {
      auto n = by_name_.find(d->name);
      if (n != by_name_.end() && by_desc_.find(d) == by_desc_.end()) {
        try {
          check(layouts_[n->second], d);
        } catch (const schema_mismatch&) {
          pending_.push_back({n->second, d});
          continue;
        }
      }
    }
    bind_stored(d);
  }
}

std::uint32_t schema_registry::adopt(const pending_change& p) {
  if (!store_.in_transaction()) throw no_transaction(std::string("converting type ") + p.program->name);
  store_.put("h:" + std::string(p.program->name) + "@" + std::to_string(p.index),
             serialize(layouts_.at(p.index), p.index));
  replaced_.emplace_back(p.program->name, p.index);
  return store_new(p.program);
}

void schema_registry::check(const type_layout& stored, const type_descriptor* d) const {
  type_layout now = layout_of(d);
  auto a = lines(stored.members), b = lines(now.members);
  if (stored.size == now.size && stored.align == now.align && stored.pointers == now.pointers &&
      stored.vptrs == now.vptrs && a == b)
    return;
  std::string msg = "schema mismatch: type " + stored.name + " is stored with a layout that differs from the program's";
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  if (i < a.size() || i < b.size()) {
    msg += "; first differing member: stored '" + (i < a.size() ? a[i] : std::string("(none)")) + "', program '" +
           (i < b.size() ? b[i] : std::string("(none)")) + "'";
  }
  if (stored.size != now.size)
    msg += "; size " + std::to_string(stored.size) + " stored, " + std::to_string(now.size) + " in the program";
  else if (stored.pointers != now.pointers)
    msg += "; pointer offsets [" + join(stored.pointers) + "] stored, [" + join(now.pointers) + "] in the program";
  msg += " (open the database with qs::options::evolve set to convert its objects to the program's layout)";
  throw schema_mismatch(msg);
}

std::uint32_t schema_registry::index_of_slow(const type_descriptor* d) {
  auto it = by_desc_.find(d);
  if (it != by_desc_.end()) {
    recent_[recent_slot(d)] = {d, it->second};
    return it->second;
  }
  if (auto index = bind_stored(d)) return *index;
  return add(d);
}

std::optional<std::uint32_t> schema_registry::bind_stored(const type_descriptor* d) {
  auto n = by_name_.find(d->name);
  if (n == by_name_.end()) return std::nullopt;
  check(layouts_[n->second], d);
  layouts_[n->second].program = d;
  forget_recent();
  by_desc_[d] = n->second;
  return n->second;
}

std::uint32_t schema_registry::add(const type_descriptor* d) {
  if (!store_.in_transaction())
    throw no_transaction(std::string("allocating an object of type ") + d->name + " needs a transaction");
  if (store_.shared()) {
    // Other clients add types too: read the stored schema again inside this
    // transaction (the server's locks on what it read make two concurrent
    // additions serialize), and take the type if it was added meanwhile.
    load();
    if (auto index = bind_stored(d)) return *index;
  }
  return store_new(d);
}

std::uint32_t schema_registry::store_new(const type_descriptor* d) {
  std::uint32_t index = static_cast<std::uint32_t>(std::max<std::size_t>(layouts_.size(), first_stored_type));
  if (index >= max_type_index)
    throw schema_error(std::string("no type index is left for type ") + d->name + " (" +
                       std::to_string(max_type_index) + " at most)");
  type_layout l = layout_of(d);
  store_.put(std::string("t:") + d->name, serialize(l, index));
  layouts_.resize(index + 1);
  layouts_[index] = std::move(l);
  by_name_[d->name] = index;
  forget_recent();
  by_desc_[d] = index;
  added_.push_back(index);
  return index;
}

void schema_registry::abort() {
  forget_recent();
  for (std::uint32_t index : added_) {
    by_name_.erase(layouts_[index].name);
    for (auto it = by_desc_.begin(); it != by_desc_.end();)
      it = it->second == index ? by_desc_.erase(it) : std::next(it);
    layouts_[index] = type_layout{};
  }
  for (auto& [name, index] : replaced_) by_name_[name] = index;
  replaced_.clear();
  while (layouts_.size() > first_stored_type && layouts_.back().name.empty()) layouts_.pop_back();
  added_.clear();
}

std::string member_name(const type_layout& l, std::uint32_t offset) {
  for (const member_info& m : l.members)
    if (m.k != member_info::kind::bits && m.offset == offset) return l.name + "::" + m.path;
  return l.name + " (member at offset " + std::to_string(offset) + ")";
}

}  // namespace qs::detail
